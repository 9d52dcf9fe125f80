import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import {
  DEFAULT_QUERY,
  configModel,
  counts,
  defaultCheck,
  breakable,
  helpParts,
  queryOptions,
  toggleSort,
  type ConfigOption,
  type RetraceChecked,
} from './view-model';

function opt(name: string, value: string, scoped: boolean, trace_context: boolean, help = ''): ConfigOption {
  return { name, value, value_json: null, scoped, trace_context, help, kind: scoped ? 'State' : 'Flag', option_type: 'bool' };
}

const OPTIONS = [
  opt('jax_enable_x64', 'False', true, true, 'Enable 64-bit types to be used'),
  opt('jax_platform_name', "''", false, false, 'Platform name for XLA'),
  opt('jax_debug_nans', 'False', true, false, 'Add nan checks to every operation'),
  opt('jax_default_matmul_precision', 'None', true, true, 'Control the default matmul precision'),
];

describe('config view model', () => {
  it('searches name, value and help, case-insensitively, every word', () => {
    expect(queryOptions(OPTIONS, { ...DEFAULT_QUERY, search: 'X64' }).map((o) => o.name)).toEqual(['jax_enable_x64']);
    expect(queryOptions(OPTIONS, { ...DEFAULT_QUERY, search: 'nan checks' }).map((o) => o.name)).toEqual([
      'jax_debug_nans',
    ]);
    expect(queryOptions(OPTIONS, { ...DEFAULT_QUERY, search: 'none' }).map((o) => o.name)).toEqual([
      'jax_default_matmul_precision',
    ]);
  });

  it('filters to trace-context or scoped options', () => {
    const traced = queryOptions(OPTIONS, { ...DEFAULT_QUERY, onlyTraceContext: true }).map((o) => o.name);
    expect(traced).toEqual(['jax_default_matmul_precision', 'jax_enable_x64']);
    expect(queryOptions(OPTIONS, { ...DEFAULT_QUERY, onlyScoped: true })).toHaveLength(3);
  });

  it('sorts by a column, toggling direction, ties by name', () => {
    let q = toggleSort(DEFAULT_QUERY, 'trace_context');
    expect(queryOptions(OPTIONS, q).map((o) => o.trace_context)).toEqual([true, true, false, false]);
    q = toggleSort(q, 'trace_context');
    expect(q.descending).toBe(true);
    expect(queryOptions(OPTIONS, q).map((o) => o.trace_context)).toEqual([false, false, true, true]);
    expect(queryOptions(OPTIONS, DEFAULT_QUERY).map((o) => o.name)[0]).toBe('jax_debug_nans');
  });

  it('reads the listing and the experiments from the events', () => {
    const events = [
      { type: 'config_options_listed', seq: 1, run_id: 'r', options: OPTIONS, trace_context_names: [] },
      {
        type: 'config_retrace_checked',
        seq: 2,
        run_id: 'r',
        option: 'jax_enable_x64',
        value: 'True',
        trace_context: true,
        retraced: true,
        traces: 2,
        fun_name: 'f',
        jaxpr: null,
      },
    ] as Event[];
    const m = configModel(events);
    expect(m.listed?.options).toHaveLength(4);
    expect(m.checks.map((c) => c.retraced)).toEqual([true]);
    expect(counts(OPTIONS)).toEqual({ total: 4, scoped: 3, traced: 2 });
  });
});

function check(option: string, retraced: boolean): RetraceChecked {
  return {
    type: 'config_retrace_checked',
    seq: 0,
    run_id: 'r',
    option,
    value: 'True',
    trace_context: retraced,
    retraced,
    traces: 1,
    fun_name: 'f',
    jaxpr: null,
  };
}

describe('config help and default experiment', () => {
  it('renders RST ``literals`` and `names` as code, links and stray backticks as text', () => {
    expect(helpParts('Guard for ``jax.Array`` objects. Default is ``allow``.')).toEqual([
      { text: 'Guard for ', code: false },
      { text: 'jax.Array', code: true },
      { text: ' objects. Default is ', code: false },
      { text: 'allow', code: true },
      { text: '.', code: false },
    ]);
    expect(helpParts('If False, `reduce_sum` on `f16`')).toEqual([
      { text: 'If False, ', code: false },
      { text: 'reduce_sum', code: true },
      { text: ' on ', code: false },
      { text: 'f16', code: true },
    ]);
    const link = 'See `API compatibility <https://docs.jax.dev/x.html>`_).';
    expect(helpParts(link)).toEqual([{ text: link, code: false }]);
    expect(helpParts('a ` b')).toEqual([{ text: 'a ` b', code: false }]);
    expect(helpParts('')).toEqual([]);
  });

  it('lets long words (URLs, enum reprs) wrap after their separators, keeping the text', () => {
    const url = 'See https://docs.jax.dev/en/latest/api_compatibility.html for more.';
    const pieces = breakable(url);
    expect(pieces.join('')).toBe(url);
    expect(pieces).toEqual([
      'See https:',
      '/',
      '/',
      'docs.',
      'jax.',
      'dev/',
      'en/',
      'latest/',
      'api_',
      'compatibility.',
      'html for more.',
    ]);
    const value = "<NumpyDtypePromotion.STANDARD: 'standard'>";
    expect(breakable(value).join('')).toBe(value);
    expect(breakable("'xla_gpu_per_fusion_autotune_cache_dir'")).toEqual([
      "'xla_",
      'gpu_',
      'per_',
      'fusion_',
      'autotune_',
      'cache_',
      "dir'",
    ]);
    // prose and short words stay one piece: no break inside jax.numpy
    expect(breakable('Use jax.numpy and jax.lax here.')).toEqual(['Use jax.numpy and jax.lax here.']);
    expect(breakable('')).toEqual(['']);
  });

  it('shows the first flip that retraced, else the latest', () => {
    const nans = check('jax_debug_nans', false);
    const x64 = check('jax_enable_x64', true);
    const prec = check('jax_default_matmul_precision', true);
    expect(defaultCheck([x64, prec, nans])?.option).toBe('jax_enable_x64');
    expect(defaultCheck([nans, prec])?.option).toBe('jax_default_matmul_precision');
    expect(defaultCheck([nans])?.option).toBe('jax_debug_nans');
    expect(defaultCheck([])).toBeUndefined();
  });
});
