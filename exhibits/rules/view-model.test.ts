import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import {
  rowKey,
  rowOf,
  breakParts,
  DEFAULT_QUERY,
  cellLabel,
  cellLocation,
  columnCounts,
  columnLabel,
  detailRow,
  importedSummary,
  keyRows,
  numbered,
  isMissing,
  loweringOn,
  platformColumns,
  queryRows,
  rulesModel,
  shortLocation,
  shownColumns,
  type RuleCell,
  type RuleRow,
  type RulesTabulated,
} from './view-model';

function cell(table: string, line: number, file = 'jax/_src/lax/lax.py'): RuleCell {
  return { table, name: 'rule', file, line, text: `line ${line}` };
}

// Shaped like the probe's event for four real primitives (cells as JAX 0.10.2 registers them).
const rows: RuleRow[] = [
  {
    primitive: 'dot_general',
    var: 'dot_general_p',
    file: 'jax/_src/lax/lax.py',
    line: 5000,
    used: true,
    own: false,
    cells: {
      jvp: cell('ad.primitive_jvps', 6100),
      transpose: cell('ad.fancy_transposes', 6101),
      batching: cell('batching.fancy_primitive_batchers', 6102),
      lowering: cell('mlir._lowerings', 6205),
      cpu: cell("mlir._platform_specific_lowerings['cpu']", 6208),
      tpu: cell("mlir._platform_specific_lowerings['tpu']", 6208),
    },
  },
  {
    primitive: 'psum',
    var: 'psum_p',
    file: 'jax/_src/lax/parallel.py',
    line: 1000,
    used: false,
    own: false,
    cells: {
      jvp: cell('ad.primitive_jvps', 1054, 'jax/_src/lax/parallel.py'),
      transpose: cell('ad.primitive_transposes', 1054, 'jax/_src/lax/parallel.py'),
      batching: cell('batching.fancy_primitive_batchers', 1055, 'jax/_src/lax/parallel.py'),
      lowering: cell('mlir._lowerings', 1052, 'jax/_src/lax/parallel.py'),
    },
  },
  {
    primitive: 'sin',
    var: 'sin_p',
    file: 'jax/_src/lax/lax.py',
    line: 4570,
    used: true,
    own: false,
    cells: {
      jvp: cell('ad.primitive_jvps', 4571),
      batching: cell('batching.fancy_primitive_batchers', 4570),
      lowering: cell('mlir._lowerings', 4573),
    },
  },
  {
    primitive: 'zeros_like',
    var: 'zeros_like_p',
    file: 'jax/_src/ad_util.py',
    line: 40,
    used: false,
    own: false,
    cells: {},
  },
  {
    primitive: 'cholesky',
    var: 'cholesky_p',
    file: 'jax/_src/lax/linalg.py',
    line: 900,
    used: false,
    own: false,
    cells: {
      cpu: cell("mlir._platform_specific_lowerings['cpu']", 921, 'jax/_src/lax/linalg.py'),
    },
  },
];

const tabulated: RulesTabulated = {
  type: 'rules_tabulated',
  seq: 3,
  columns: ['jvp', 'transpose', 'batching', 'lowering', 'cpu', 'cuda', 'rocm', 'tpu'],
  column_tables: {},
  rows,
  counts: { jvp: 3, transpose: 2, batching: 3, lowering: 3, cpu: 2, cuda: 0, rocm: 0, tpu: 1, primitives: 5 },
  table_sizes: {},
  imported: ['jax'],
  not_imported: ['flax'],
  jax_version: '0.10.2',
  fun_name: 'f',
  jaxpr: null,
  jaxpr_primitives: ['dot_general', 'sin'],
} as unknown as RulesTabulated;

const names = (rs: readonly RuleRow[]): string[] => rs.map((r) => r.primitive);

describe('rules view model', () => {
  it('finds the last rules_tabulated event', () => {
    const events = [{ type: 'run_started', seq: 0 }, tabulated] as unknown as Event[];
    expect(rulesModel(events)).toBe(tabulated);
    expect(rulesModel([])).toBeUndefined();
  });

  it('searches by primitive name and by Python global', () => {
    expect(names(queryRows(rows, { ...DEFAULT_QUERY, search: 'SIN' }))).toEqual(['sin']);
    expect(names(queryRows(rows, { ...DEFAULT_QUERY, search: 'psum_p' }))).toEqual(['psum']);
    expect(queryRows(rows, DEFAULT_QUERY)).toHaveLength(rows.length);
  });

  it('filters rows missing a rule', () => {
    expect(names(queryRows(rows, { ...DEFAULT_QUERY, missing: 'transpose' }))).toEqual([
      'sin',
      'zeros_like',
      'cholesky',
    ]);
    expect(names(queryRows(rows, { ...DEFAULT_QUERY, missing: 'jvp' }))).toEqual(['zeros_like', 'cholesky']);
    // A platform is missing only when neither its own rule nor the generic lowering exists.
    expect(names(queryRows(rows, { ...DEFAULT_QUERY, missing: 'tpu' }))).toEqual(['zeros_like', 'cholesky']);
    expect(isMissing(rows[1]!, 'cpu')).toBe(false);
  });

  it('filters by platform: rows that lower there, and that platform column', () => {
    expect(names(queryRows(rows, { ...DEFAULT_QUERY, platform: 'cpu' }))).toEqual([
      'dot_general',
      'psum',
      'sin',
      'cholesky',
    ]);
    expect(names(queryRows(rows, { ...DEFAULT_QUERY, platform: 'cuda' }))).toEqual(['dot_general', 'psum', 'sin']);
    expect(names(queryRows(rows, { ...DEFAULT_QUERY, platform: 'cuda', missing: 'cuda' }))).toEqual([
      'zeros_like',
      'cholesky',
    ]);
    expect(shownColumns(tabulated, { platform: 'tpu' })).toEqual(['jvp', 'transpose', 'batching', 'lowering', 'tpu']);
    expect(shownColumns(tabulated, { platform: 'all' })).toEqual(tabulated.columns);
    expect(platformColumns(tabulated)).toEqual(['cpu', 'cuda', 'rocm', 'tpu']);
    expect(loweringOn(rows[0]!, 'cpu')).toBe('platform');
    expect(loweringOn(rows[2]!, 'cpu')).toBe('generic');
    expect(loweringOn(rows[3]!, 'cpu')).toBe('none');
  });

  it('keeps only the primitives of the jaxpr', () => {
    expect(names(queryRows(rows, { ...DEFAULT_QUERY, onlyUsed: true }))).toEqual(['dot_general', 'sin']);
  });

  it('counts per column equal the event counts on all rows, and follow the filter', () => {
    const all = columnCounts(rows, tabulated.columns);
    for (const c of tabulated.columns) expect(all[c]).toBe(tabulated.counts[c]);
    const shown = columnCounts(queryRows(rows, { ...DEFAULT_QUERY, missing: 'transpose' }), tabulated.columns);
    expect(shown['transpose']).toBe(0);
    expect(shown['cpu']).toBe(1);
  });

  it('labels and locates cells', () => {
    expect(cellLabel('transpose', rows[0]!.cells['transpose']!)).toBe('fancy');
    expect(cellLabel('transpose', rows[1]!.cells['transpose']!)).toBe('plain');
    expect(cellLocation(rows[2]!.cells['lowering']!)).toBe('jax/_src/lax/lax.py:4573');
    expect(shortLocation(rows[2]!.cells['lowering']!)).toBe('lax:4573');
    expect(cellLocation({ file: null, line: null })).toBe('');
  });
});

describe('breakParts', () => {
  it('cuts after _ : . and keeps the text', () => {
    expect(breakParts('fused_attention_stablehlo:1139')).toEqual(['fused_', 'attention_', 'stablehlo:', '1139']);
    expect(breakParts('dot_product_attention_fp8_bwd_wrapper').join('')).toBe('dot_product_attention_fp8_bwd_wrapper');
    expect(breakParts('sin')).toEqual(['sin']);
  });
});

describe('a snippet Primitive named like a JAX primitive', () => {
  const jaxAdd: RuleRow = { primitive: 'add', var: 'add_p', file: 'jax/_src/lax/lax.py', line: 1, used: false, own: false, cells: { jvp: cell('ad.primitive_jvps', 2) } };
  const mine: RuleRow = { primitive: 'add', var: null, file: null, line: null, used: true, own: true, cells: {} };
  it('is a row of its own, named as such, and a name picks the one in the jaxpr', () => {
    expect(rowKey(jaxAdd)).toBe('add');
    expect(rowKey(mine)).toBe('add (your Primitive)');
    expect(rowOf([jaxAdd, mine], 'add')).toBe(mine); // the jaxpr's add is the snippet's
    expect(rowOf([jaxAdd, mine], 'add (your Primitive)')).toBe(mine);
    expect(rowOf([jaxAdd, { ...mine, used: false }], 'add')).toBe(jaxAdd);
  });
});

describe('the detail panel', () => {
  const jaxAdd: RuleRow = { primitive: 'add', var: 'add_p', file: 'jax/_src/lax/lax.py', line: 1, used: false, own: false, cells: { jvp: cell('ad.primitive_jvps', 2) } };
  const mine: RuleRow = { primitive: 'add', var: null, file: null, line: null, used: true, own: true, cells: {} };
  const both = { rows: [jaxAdd, mine], jaxpr_primitives: ['add'] };

  it("shows the jaxpr's first primitive until a row or a name is picked", () => {
    expect(detailRow(tabulated, null, null)?.primitive).toBe('dot_general');
    expect(detailRow(tabulated, 'psum', null)?.primitive).toBe('psum');
    expect(detailRow({ rows, jaxpr_primitives: [] }, null, null)).toBeUndefined();
    expect(detailRow(tabulated, 'no_such_primitive', null)).toBeUndefined();
  });

  it("keeps JAX's add apart from the snippet's when its row is clicked, and follows a later name", () => {
    expect(detailRow(both, null, null)).toBe(mine); // the jaxpr's add is the snippet's
    expect(detailRow(both, rowKey(jaxAdd), jaxAdd)).toBe(jaxAdd);
    expect(detailRow(both, rowKey(mine), mine)).toBe(mine);
    // an eqn click sets the name and leaves the clicked row behind: the name wins
    expect(detailRow(tabulated, 'sin', jaxAdd)?.primitive).toBe('sin');
  });

  it('labels columns and numbers the registering lines from the first', () => {
    expect(['jvp', 'transpose', 'batching', 'lowering', 'cpu'].map(columnLabel)).toEqual([
      'JVP',
      'transpose',
      'batching',
      'lowering (generic)',
      'cpu',
    ]);
    expect(numbered(4573, 'mlir.register_lowering(\n    sin_p, ...)')).toBe(
      '4573  mlir.register_lowering(\n4574      sin_p, ...)',
    );
    expect(numbered(7, 'x')).toBe('   7  x');
  });

  it('summarises the imported modules as a count of jax modules and the other libraries', () => {
    const imported = ['jax', 'jax.numpy', 'jax.scipy', 'jax.scipy.linalg', 'flax', 'flax.linen', 'jax.experimental.sparse', 'jax.numpy'];
    expect(importedSummary(imported)).toEqual({ jax: 5, others: ['flax', 'flax.linen'] });
    expect(importedSummary([])).toEqual({ jax: 0, others: [] });
  });

  it('keys a second JAX primitive of the same name by its file', () => {
    const core = { primitive: 'gather', var: 'gather_p', file: 'jax/_src/lax/slicing.py', line: 1, cells: {}, used: true, own: false };
    const pallas = { ...core, file: 'jax/_src/pallas/mosaic/sc_primitives.py', used: false };
    keyRows([core, pallas]);
    expect(rowKey(core)).toBe('gather');
    expect(rowKey(pallas)).toBe('gather (jax/_src/pallas/mosaic/sc_primitives.py)');
    expect(rowOf([core, pallas], 'gather')).toBe(core);
    expect(rowOf([core, pallas], rowKey(pallas))).toBe(pallas);
  });
});
