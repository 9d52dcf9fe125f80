/**
 * A view that cannot run again (`ExhibitViewProps.rerunLocked`: the standalone replay of a
 * recording, design 0034) locks every control that calls `rerun`, and only those. Each exhibit
 * view with rerun controls is rendered (Svelte's server renderer) at the end of its golden event
 * stream twice, with and without the lock: the rerun controls are disabled (text inputs
 * read-only, chips not draggable) with the reason as their title; every other control renders
 * exactly as without the lock (stepping, picking a step, details stay usable). The replay page
 * passes the lock: a recorded caches run opens with its preset menu disabled, its stepper usable.
 */
import { render } from 'svelte/server';
import { describe, expect, it } from 'vitest';
import { rerunTitle } from './exhibit-api';
import { EXHIBITS } from './exhibits';
import type { Event } from './protocol';
import { defaultRunOptions } from './protocol';
import { RECORDING_FORMAT, RECORDING_RERUN_LOCKED, type Recording } from './recording';
import Replay from './Replay.svelte';
import { renderView } from './test/render-view';

const GOLDENS = import.meta.glob('../../exhibits/*/golden/*.events.jsonl', {
  query: '?raw',
  import: 'default',
  eager: true,
}) as Record<string, string>;

interface Case {
  exhibit: string;
  golden: string;
  /** the data-testids of the controls that call rerun (each must match one control at least) */
  rerun: RegExp[];
  /** controls that do not rerun: on screen and enabled with the lock */
  keeps?: string[];
}

const CASES: Case[] = [
  { exhibit: 'caches', golden: 'new_shape', rerun: [/^caches-preset$/], keeps: ['caches-call-0', 'timeline-export-svg'] },
  { exhibit: 'cache_key', golden: 'matmul', rerun: [/^perturb-/, /^xla-flags-input$/, /^xla-flags-run$/] },
  { exhibit: 'lazy_tensor', golden: 'cuts', rerun: [/^lazy-eager$/, /^lazy-torchax$/] },
  { exhibit: 'partial_eval', golden: 'mlp_loss', rerun: [/^known-toggle-\d+$/] },
  { exhibit: 'pallas', golden: 'matmul', rerun: [/^target-host$/, /^target-tpu-v5e$/], keeps: ['program-slider', 'grid-point'] },
  { exhibit: 'pjrt_registry', golden: 'foo_unknown', rerun: [/^pjrt-device$/, /^pjrt-dynamic$/, /^pjrt-preset$/] },
  { exhibit: 'recompile_hunt', golden: 'fresh_closure', rerun: [/^steps-input$/, /^steps-run$/], keeps: ['step-0'] },
  { exhibit: 'stations', golden: 'mlp_loss', rerun: [/^target-host$/, /^target-tpu-v5e$/] },
  { exhibit: 'xla_passes', golden: 'mlp_softmax', rerun: [/^target-host$/, /^target-tpu-v5e$/] },
  { exhibit: 'shard_map', golden: 'psum_rows', rerun: [/^sm-in-specs$/, /^sm-apply-spec$/, /^sm-reset-spec$/] },
  {
    exhibit: 'sharding',
    golden: 'sum_sharded_axis',
    rerun: [/^sharding-(mesh-shape|axis-names|axis-type|array-shape|spec)$/, /^sharding-apply$/, /^sharding-reset$/],
  },
  {
    exhibit: 'tracing',
    golden: 'mlp_loss',
    rerun: [/^call-(same|shape|dtype)$/, /^call-expr-input$/, /^call-expr$/],
    keeps: ['tab-text', 'tab-graph'],
  },
  { exhibit: 'transform_order', golden: 'per_example_grads', rerun: [/^chip-\d+$/, /^chip-remove-\d+$/, /^palette-/] },
  { exhibit: 'vmap', golden: 'per_example_loss', rerun: [/^vmap-(in|out)-axes$/, /^vmap-apply-axes$/, /^vmap-reset-axes$/] },
  { exhibit: 'wrapped_fun', golden: 'vmap_sin', rerun: [/^transform-select$/] },
];

interface Control {
  tag: string;
  attrs: Map<string, string>;
  testid: string | null;
}

function unescape(text: string): string {
  return text.replaceAll('&quot;', '"').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
}

/** The controls in server-rendered HTML: buttons, selects, inputs and role="button" elements. */
function controlsOf(html: string): Control[] {
  const out: Control[] = [];
  for (const m of html.matchAll(/<([a-z]+)((?:\s+[^\s=/>]+(?:="[^"]*")?)*)\s*\/?>/g)) {
    const attrs = new Map<string, string>();
    for (const a of (m[2] ?? '').matchAll(/([^\s=/>]+)(?:="([^"]*)")?/g)) attrs.set(a[1] ?? '', unescape(a[2] ?? ''));
    const tag = m[1] ?? '';
    if (['button', 'select', 'input'].includes(tag) || attrs.get('role') === 'button') {
      out.push({ tag, attrs, testid: attrs.get('data-testid') ?? null });
    }
  }
  return out;
}

function isLocked(c: Control): boolean {
  return c.attrs.has('disabled') || c.attrs.has('readonly') || c.attrs.get('draggable') === 'false';
}

function eventsOf(exhibit: string, golden: string): Event[] {
  const text = GOLDENS[`../../exhibits/${exhibit}/golden/${golden}.events.jsonl`];
  if (text === undefined) throw new Error(`no golden ${exhibit}/${golden}`);
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Event);
}

function controlsOfView(exhibit: string, events: Event[], rerunLocked: string | null): Control[] {
  const View = EXHIBITS[exhibit]?.View;
  if (View === undefined) throw new Error(`no view of ${exhibit}`);
  return controlsOf(renderView(View, events, rerunLocked === null ? {} : { rerunLocked }));
}

describe('rerunTitle', () => {
  it('is the lock’s reason when the view cannot run again, else the control’s own title', () => {
    expect(rerunTitle('a recording', 'own')).toBe('a recording');
    expect(rerunTitle('a recording')).toBe('a recording');
    expect(rerunTitle(null, 'own')).toBe('own');
    expect(rerunTitle(undefined, 'own')).toBe('own');
    expect(rerunTitle(null)).toBeUndefined();
    expect(rerunTitle('', 'own')).toBe('own');
  });
});

describe('a view that cannot run again', () => {
  it('covers every view that takes rerun', () => {
    const sources = import.meta.glob('../../exhibits/*/View.svelte', { query: '?raw', import: 'default', eager: true });
    // a view's script that names `rerun` (its props, a helper, a sub-component's callback)
    const takingRerun = Object.entries(sources as Record<string, string>)
      .filter(([path, text]) => !path.includes('/_') && /\brerun\b/.test(text.split('</script>')[0] ?? ''))
      .map(([path]) => path.split('/').at(-2));
    expect(takingRerun.sort()).toEqual(CASES.map((c) => c.exhibit).sort());
  });

  for (const c of CASES) {
    it(`${c.exhibit}: locks its rerun controls (${c.golden}), and nothing else`, () => {
      const events = eventsOf(c.exhibit, c.golden);
      const live = controlsOfView(c.exhibit, events, null);
      const locked = controlsOfView(c.exhibit, events, RECORDING_RERUN_LOCKED);
      expect(locked.map((x) => x.testid)).toEqual(live.map((x) => x.testid));
      const reruns = (x: Control) => x.testid !== null && c.rerun.some((r) => r.test(x.testid ?? ''));

      for (const r of c.rerun) expect(live.some((x) => r.test(x.testid ?? '')), `${r} on screen`).toBe(true);
      let newlyLocked = 0;
      live.forEach((before, i) => {
        const after = locked[i] as Control;
        const name = `${before.tag} ${before.testid ?? i}`;
        expect(before.attrs.get('title') ?? '', name).not.toContain(RECORDING_RERUN_LOCKED);
        if (!reruns(before)) {
          // not a rerun control: the lock changes nothing about it
          expect(Object.fromEntries(after.attrs), name).toEqual(Object.fromEntries(before.attrs));
        } else if (!before.attrs.has('disabled')) {
          // usable in the live page: locked in a recording, saying why
          expect(isLocked(before), name).toBe(false);
          expect(isLocked(after), name).toBe(true);
          expect(after.attrs.get('title') ?? '', name).toContain(RECORDING_RERUN_LOCKED);
          newlyLocked += 1;
        }
        if (after.attrs.get('title')?.includes(RECORDING_RERUN_LOCKED)) expect(reruns(after), name).toBe(true);
      });
      expect(newlyLocked).toBeGreaterThan(0);
      for (const keep of c.keeps ?? []) {
        const kept = locked.find((x) => x.testid === keep);
        expect(kept, keep).toBeDefined();
        expect(kept && isLocked(kept), keep).toBe(false);
      }
    });
  }
});

describe('the replay page', () => {
  it('locks the view’s rerun controls and leaves its stepper usable', () => {
    const events = eventsOf('caches', 'new_shape');
    const recording: Recording = {
      format: RECORDING_FORMAT,
      exhibit: 'caches',
      code: 'def f(x): ...',
      options: defaultRunOptions(),
      recorded_at: '2025-01-01T00:00:00Z',
      events,
    };
    const html = render(Replay, { props: { recording } }).body;
    const controls = controlsOf(html);
    const preset = controls.find((x) => x.testid === 'caches-preset');
    expect(preset && isLocked(preset)).toBe(true);
    expect(preset?.attrs.get('title')).toBe(RECORDING_RERUN_LOCKED);
    // it opens at the last event: the stepper goes back, a call of the timeline can be picked
    for (const id of ['stepper-first', 'stepper-prev', 'caches-call-0']) {
      const control = controls.find((x) => x.testid === id);
      expect(control, id).toBeDefined();
      expect(control && isLocked(control), id).toBe(false);
    }
    expect(html).not.toContain('data-testid="rerun-note"');
  });
});
