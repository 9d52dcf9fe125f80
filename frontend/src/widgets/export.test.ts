import { describe, expect, it } from 'vitest';
import {
  MAX_CANVAS_AREA,
  MAX_CANVAS_SIDE,
  PNG_SCALE,
  exhibitFromHash,
  exportFileName,
  pngSize,
  slug,
  styleText,
  textExtension,
} from './export';

describe('export file names', () => {
  it('names a file <exhibit>-<artefact>.<ext>', () => {
    expect(exportFileName('tracing', 'jaxpr', 'txt')).toBe('tracing-jaxpr.txt');
    expect(exportFileName('stations', 'StableHLO text', 'mlir')).toBe('stations-stablehlo-text.mlir');
    expect(slug('LLVM IR of fusion.1')).toBe('llvm-ir-of-fusion-1');
    expect(slug('…')).toBe('artefact');
  });

  it('reads the exhibit from the URL fragment', () => {
    expect(exhibitFromHash('#e=sharding&c=abc')).toBe('sharding');
    expect(exhibitFromHash('')).toBe('jaxscope');
    // the exhibit the page shows for it (url-state reads the last)
    expect(exhibitFromHash('#e=transpose&e=jvp&c=abc')).toBe('jvp');
    expect(exhibitFromHash('#e=../x')).toBe('jaxscope');
  });

  it('gives StableHLO .mlir, HLO .hlo, LLVM IR .ll, anything else .txt', () => {
    // The first line LLVM prints for a module (XLA's CPU kernels, xla_passes' LLVM IR panel).
    expect(textExtension("; ModuleID = '__compute_module_fusion'\nsource_filename = \"x\"\n")).toBe('ll');
    // The openings of JAX's own texts: lowered.as_text() and the HLO module's to_string().
    expect(textExtension('module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n')).toBe('mlir');
    expect(textExtension('HloModule jit_f, entry_computation_layout={(f32[3]{0})->f32[3]{0}}\n')).toBe('hlo');
    expect(textExtension('{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }')).toBe('txt');
  });
});

describe('pngSize', () => {
  it('draws PNG_SCALE pixels per CSS pixel', () => {
    expect(pngSize(300, 200)).toEqual({ width: 300 * PNG_SCALE, height: 200 * PNG_SCALE, scale: PNG_SCALE });
  });

  it('scales a picture down to the largest canvas a browser draws', () => {
    const tall = pngSize(400, 60_000);
    expect(tall.height).toBeLessThanOrEqual(MAX_CANVAS_SIDE);
    expect(tall.width / tall.height).toBeCloseTo(400 / 60_000, 3);
    const big = pngSize(12_000, 12_000);
    expect(big.width * big.height).toBeLessThanOrEqual(MAX_CANVAS_AREA);
    expect(big.width).toBe(big.height);
  });
});

describe('styleText', () => {
  it('writes the computed values of the SVG properties, leaving out empty ones', () => {
    const computed: Record<string, string> = { fill: 'rgb(255, 255, 255)', stroke: ' rgba(0, 0, 0, 0.45) ', 'font-size': '12px', color: 'red' };
    const style = { getPropertyValue: (name: string) => computed[name] ?? '' };
    expect(styleText(style)).toBe('fill:rgb(255, 255, 255);stroke:rgba(0, 0, 0, 0.45);font-size:12px');
    expect(styleText(style, ['color'])).toBe('color:red');
  });
});
