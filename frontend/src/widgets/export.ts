/**
 * Export of what a panel shows (design 0035): a text artefact is copied to the clipboard or
 * downloaded as a file; a picture (the dataflow graph, the sharding device grid, the caches
 * timeline, the prng key tree) is downloaded as SVG or PNG.
 *
 * An `<svg>` (the dataflow graph) is serialized here as a plain SVG: a clone with the computed
 * value of each presentation property written into its `style` attribute, so that the file looks
 * as on the page without the page's stylesheet (whose colours are CSS variables and
 * `color-mix()` of them, which the file would not have). An HTML picture (the device grid, the
 * timeline, the key tree are `<div>`s) is drawn by html-to-image, which inlines computed styles
 * the same way and wraps the clone in an SVG `<foreignObject>`. A PNG is either SVG drawn on a
 * canvas. Data URLs throughout: the page's Content-Security-Policy allows `img-src data:`, not
 * `blob:`.
 */
import { toPng as htmlToPng, toSvg as htmlToSvg } from 'html-to-image';

/** The properties of an SVG element that its stylesheet sets and a standalone file must carry. */
export const SVG_STYLE_PROPERTIES: readonly string[] = [
  'fill',
  'fill-opacity',
  'stroke',
  'stroke-width',
  'stroke-dasharray',
  'stroke-opacity',
  'stroke-linejoin',
  'stroke-linecap',
  'opacity',
  'font-family',
  'font-size',
  'font-weight',
  'font-style',
  'text-anchor',
  'dominant-baseline',
  'visibility',
  'display',
];

/** The largest side and area of a canvas Chromium draws (larger ones come out blank). */
export const MAX_CANVAS_SIDE = 16_384;
export const MAX_CANVAS_AREA = 16_384 * 16_384 / 2;

/** A PNG is drawn at this many pixels per CSS pixel (crisp on a high-density screen). */
export const PNG_SCALE = 2;

/** `style` text of the properties `names` of `style` (a `CSSStyleDeclaration`), empty values left out. */
export function styleText(style: Pick<CSSStyleDeclaration, 'getPropertyValue'>, names: readonly string[] = SVG_STYLE_PROPERTIES): string {
  const parts: string[] = [];
  for (const name of names) {
    const value = style.getPropertyValue(name).trim();
    if (value !== '') parts.push(`${name}:${value}`);
  }
  return parts.join(';');
}

/** The exhibit of the page, from the URL fragment (`#e=tracing&c=...`, `url-state.ts`); `jaxscope` when none. */
export function exhibitFromHash(hash: string): string {
  // the last `e`, as url-state's decodeFragment and decodePlace read a fragment that names two
  const id = new URLSearchParams(hash.replace(/^#/, '')).getAll('e').at(-1) ?? null;
  return id !== null && /^[a-z0-9_]+$/.test(id) ? id : 'jaxscope';
}

/** A file-name part: lower case, runs of other characters as one `-`. */
export function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9_]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'artefact'
  );
}

/** The extension of a text artefact by what it is: MLIR (StableHLO), XLA's HLO text, LLVM IR, else plain text. */
export function textExtension(text: string): 'mlir' | 'hlo' | 'll' | 'txt' {
  const head = text.trimStart();
  if (head.startsWith('; ModuleID = ')) return 'll';
  if (head.startsWith('module @') || head.startsWith('module {') || head.startsWith('func.func')) return 'mlir';
  if (head.startsWith('HloModule ')) return 'hlo';
  return 'txt';
}

/** `<exhibit>-<artefact>.<ext>`. */
export function exportFileName(exhibit: string, artefact: string, ext: string): string {
  return `${slug(exhibit)}-${slug(artefact)}.${ext}`;
}

/** The size of the PNG of a picture of `width` x `height` CSS pixels: `PNG_SCALE` per pixel, less when the canvas would be too big. */
export function pngSize(width: number, height: number, scale: number = PNG_SCALE): { width: number; height: number; scale: number } {
  let s = scale;
  const side = Math.max(width, height) * s;
  if (side > MAX_CANVAS_SIDE) s *= MAX_CANVAS_SIDE / side;
  const area = width * s * height * s;
  if (area > MAX_CANVAS_AREA) s *= Math.sqrt(MAX_CANVAS_AREA / area);
  return { width: Math.max(1, Math.floor(width * s)), height: Math.max(1, Math.floor(height * s)), scale: s };
}

/** The current exhibit's id (file names). */
export function currentExhibit(): string {
  return typeof location === 'undefined' ? 'jaxscope' : exhibitFromHash(location.hash);
}

/** Copy `text` to the clipboard: the Clipboard API, else (an insecure origin, a denied permission) a hidden textarea and `execCommand('copy')`. */
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    return;
  } catch {
    // fall through to the old way
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('the browser refused to copy');
}

/** Hand `href` (a data or blob URL) to the browser as the download `name`. */
export function downloadUrl(href: string, name: string): void {
  const link = document.createElement('a');
  link.href = href;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
}

/** Download `text` as the file `name`. */
export function downloadText(text: string, name: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
  downloadUrl(url, name);
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * `svg` as a standalone SVG document: a clone whose every element carries the computed values of
 * `SVG_STYLE_PROPERTIES` in its `style`, the page's classes, handlers and focus stops dropped, on
 * a background of the page's colour, at `width` x `height` user units (the whole viewBox).
 */
export function serializeSvg(svg: SVGSVGElement, width: number, height: number, background: string): string {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  const originals = [svg, ...svg.querySelectorAll('*')];
  const copies = [clone, ...clone.querySelectorAll('*')];
  originals.forEach((el, i) => {
    const copy = copies[i];
    if (copy === undefined) return;
    const inlined = styleText(getComputedStyle(el));
    if (inlined !== '') copy.setAttribute('style', inlined);
    for (const attr of ['class', 'tabindex', 'role', 'aria-pressed']) copy.removeAttribute(attr);
  });
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  clone.setAttribute('width', String(width));
  clone.setAttribute('height', String(height));
  const view = svg.viewBox.baseVal;
  const back = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
  back.setAttribute('x', String(view?.x ?? 0));
  back.setAttribute('y', String(view?.y ?? 0));
  back.setAttribute('width', '100%');
  back.setAttribute('height', '100%');
  back.setAttribute('fill', background);
  clone.insertBefore(back, clone.firstChild);
  return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(clone);
}

/** The data URL of `svgText` drawn as a PNG of `width` x `height` CSS pixels (`pngSize`). */
export async function svgTextToPng(svgText: string, width: number, height: number): Promise<string> {
  const size = pngSize(width, height);
  const image = new Image();
  image.width = width;
  image.height = height;
  await new Promise<void>((resolve, reject) => {
    image.onload = () => resolve();
    image.onerror = () => reject(new Error('the SVG could not be drawn'));
    image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svgText)}`;
  });
  const canvas = document.createElement('canvas');
  canvas.width = size.width;
  canvas.height = size.height;
  const ctx = canvas.getContext('2d');
  if (ctx === null) throw new Error('no 2d canvas');
  ctx.drawImage(image, 0, 0, size.width, size.height);
  return canvas.toDataURL('image/png');
}

/** The page's background colour, for the picture's own background. */
export function pageBackground(el: Element): string {
  for (let at: Element | null = el; at !== null; at = at.parentElement) {
    const bg = getComputedStyle(at).backgroundColor;
    if (bg !== '' && bg !== 'transparent' && bg !== 'rgba(0, 0, 0, 0)') return bg;
  }
  return '#ffffff';
}

/** An HTML picture (`el`) as an SVG data URL (html-to-image: computed styles inlined, in a `<foreignObject>`). */
export function htmlToSvgUrl(el: HTMLElement): Promise<string> {
  return htmlToSvg(el, { backgroundColor: pageBackground(el), skipFonts: true });
}

/** An HTML picture (`el`) as a PNG data URL, at `pngSize` of its size. */
export function htmlToPngUrl(el: HTMLElement): Promise<string> {
  const size = pngSize(el.scrollWidth, el.scrollHeight);
  return htmlToPng(el, { backgroundColor: pageBackground(el), skipFonts: true, pixelRatio: size.scale });
}

/** The Download SVG/PNG of an HTML picture (`ExportButtons`'s `picture`): the element `get` returns when clicked. */
export function htmlPicture(get: () => HTMLElement | null | undefined): { svg: () => Promise<string>; png: () => Promise<string> } {
  const el = (): HTMLElement => {
    const found = get();
    if (found === null || found === undefined) throw new Error('nothing to draw');
    return found;
  };
  return { svg: () => htmlToSvgUrl(el()), png: () => htmlToPngUrl(el()) };
}
