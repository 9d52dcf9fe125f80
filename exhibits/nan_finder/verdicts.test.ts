/**
 * Verdicts and landings, on events captured from the real probe (fixtures/capture.py): the
 * verdict says "nothing downstream used it" only when f's output is finite; a custom_vjp bwd's
 * finding lands on the bwd's bad line; a non-scalar output names jax.vjp, not jax.grad; an Inf
 * names jax_debug_infs; a residual inside jax.checkpoint is recomputed; a replayed prefix of a
 * finished run is not described as never run.
 */
import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import { SNIPPET_SOURCES } from './fixtures/snippets';
import { cursorSelection, debugFlagsText, forwardVerdict, headline, landingSelection, nanModel } from './view-model';
import { fixtureLoader } from '../../frontend/src/test/fixtures';

const load = fixtureLoader(import.meta.url);
function found(name: string) {
  const f = nanModel(load(name)).found;
  if (!f?.found) throw new Error(`${name}: no finding`);
  return f;
}
const lineOf = (source: string | undefined, text: string): number => (source ?? '').split('\n').findIndex((l) => l.includes(text)) + 1;

describe("'nothing downstream used it' only when f's output is finite", () => {
  it("a log(0) that f returns (inside jax.checkpoint) says f's output itself is NaN/Inf", () => {
    const f = found('checkpoint_log');
    expect(f.forward_nonfinite).toBe(true);
    expect(f.output_nonfinite).toBe(true);
    const v = forwardVerdict(f);
    expect(v).toContain("f's output itself is NaN/Inf");
    expect(v).not.toContain('nothing downstream used it');
  });
  it('the discarded where branch (C22) still says nothing downstream used it', () => {
    const f = found('where_sqrt');
    expect(f.output_nonfinite).toBe(false);
    expect(forwardVerdict(f)).toContain("f's output is finite, so nothing downstream used it");
  });
});

describe('a custom_vjp bwd finding points at the bwd', () => {
  const src = SNIPPET_SOURCES.custom_vjp_bwd;
  const bad = lineOf(src, 'g / (r - r)');
  const f = found('custom_vjp_bwd');
  it('headline and landing name the bwd line, not the call in f', () => {
    expect(f.bwd_source?.line).toBe(bad);
    expect(headline(nanModel(load('custom_vjp_bwd')), false)).toBe(
      `Step 2 wrote an Inf: your custom_vjp backward rule h_bwd, div on line ${bad}, run for the call on line ${lineOf(src, 'h(x).sum()')}.`,
    );
    expect(landingSelection(f)?.lines).toEqual([bad]);
    expect(cursorSelection(nanModel(load('custom_vjp_bwd')))?.lines).toEqual([bad]);
  });
  it('the verdict blames the rule, not the forward value of custom_vjp_call', () => {
    const v = forwardVerdict(f);
    expect(v).toContain(`custom_vjp backward rule h_bwd`);
    expect(v).toContain(`div on line ${bad}`);
    expect(v).not.toContain('forward value');
    expect(v).not.toContain('custom_vjp_call');
  });
});

describe('a bwd inside a scan inside jax.checkpoint', () => {
  it('is walked down to the bwd line', () => {
    const src = SNIPPET_SOURCES.checkpoint_scan_custom_vjp;
    const f = found('checkpoint_scan_custom_vjp');
    expect(f.inside.map((c) => c.primitive)).toEqual(['remat2', 'scan']);
    expect(landingSelection(f, nanModel(load('checkpoint_scan_custom_vjp')).steps)?.lines).toEqual([
      lineOf(src, 'ct / x'),
    ]);
  });
});

describe('a callback raising under jax_debug_nans', () => {
  it("is reported as jax_debug_nans' outcome", () => {
    const f = found('callback_bwd');
    expect(debugFlagsText(f)).toContain(
      'Under jax_debug_nans, jax.grad stops with FloatingPointError: invalid value (nan) encountered in div (raised inside a host callback',
    );
  });
});

describe('what the debug flags do', () => {
  it('a non-scalar output names jax.vjp with the ones cotangent (jax.grad refuses it)', () => {
    const t = debugFlagsText(found('vector_where'));
    expect(t).toContain('Under jax_debug_nans, jax.vjp with the ones(f32[3]) cotangent');
    expect(t).toContain('jax.grad itself refuses a non-scalar output');
    expect(t).toContain('FloatingPointError: invalid value (nan) encountered in sqrt');
  });
  it('an Inf names jax_debug_infs and where it stops', () => {
    const t = debugFlagsText(found('checkpoint_log'));
    expect(t).toContain('Under jax_debug_nans, jax.grad raises nothing (it checks for NaN only, not Inf).');
    expect(t).toContain('jax_debug_infs, stops at the first Inf: FloatingPointError: invalid value (inf) encountered in log');
  });
});

describe('residuals inside jax.checkpoint are recomputed', () => {
  it('says so for the checkpointed sqrt', () => {
    const v = forwardVerdict(found('checkpoint_sqrt'));
    expect(v).toContain('recomputed in the backward pass');
    expect(v).not.toContain('what the forward pass saved');
  });
  it('keeps "saved" outside a checkpoint', () => {
    expect(forwardVerdict(found('norm_at_zero'))).toContain('what the forward pass saved');
  });
});

describe('replaying the first events of a finished run', () => {
  const events = load('where_sqrt');
  it('never shows the never-run text once the run has begun', () => {
    for (let k = 1; k <= events.length; k++) {
      expect(headline(nanModel(events.slice(0, k)), false)).not.toContain('Run the snippet');
    }
    const linear = events.findIndex((e) => e.type === 'linear_jaxpr_staged');
    expect(headline(nanModel(events.slice(0, 1)), false)).toBe('Linearizing f at your arguments…');
    expect(headline(nanModel(events.slice(0, linear + 1)), false)).toBe(
      'Linearized f at your arguments; walking the backward pass… (no step yet)',
    );
    expect(headline(nanModel([]), false)).toBe('Run the snippet to walk its backward pass on values.');
  });
});
