/**
 * Splits plain text with `backtick` spans (as the backend's error explanations and fixes are
 * written) into parts, so a component can render the code spans as <code> without using HTML.
 */
export interface TextPart {
  text: string;
  code: boolean;
}

/** `a \`b\` c` -> [{a }, {b, code}, { c}]; an unmatched backtick stays literal text. */
export function splitInlineCode(text: string): TextPart[] {
  const parts: TextPart[] = [];
  const re = /`([^`\n]+)`/g;
  let last = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m.index > last) parts.push({ text: text.slice(last, m.index), code: false });
    parts.push({ text: m[1] ?? '', code: true });
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push({ text: text.slice(last), code: false });
  return parts;
}
