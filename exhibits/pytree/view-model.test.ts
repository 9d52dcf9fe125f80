import { describe, expect, it } from 'vitest';
import type { Event } from '../../frontend/src/protocol';
import {
  inDiff,
  invarNames,
  leafRows,
  neighbour,
  ownKey,
  pytreeModel,
  registrationText,
  visitSentence,
  visitState,
  visitsOmitted,
} from './view-model';
import { fixtureLoader } from '../../frontend/src/test/fixtures';

// Captured from the real probe by fixtures/capture.py (never written by hand).
const load = fixtureLoader(import.meta.url);

describe('nested_params: dict, list of dataclasses, namedtuple, None', () => {
  const events = load('nested_params');
  const model = pytreeModel(events, events);

  it('reads every visit, the flattened args, the jaxpr and the call', () => {
    expect(model.argsVisits.length).toBe(model.args?.num_nodes);
    expect(model.otherVisits).toEqual([]);
    expect(model.compared).toBeUndefined();
    expect(model.jaxpr?.jaxpr.invars.length).toBe(model.args?.num_leaves);
    expect(model.called?.agree).toBe(true);
    expect(model.failure).toBeUndefined();
  });

  it('names each node by its own key and walks dict keys sorted', () => {
    const root = model.argsVisits[0]!;
    expect(ownKey(root, model.argsVisits, 'args')).toBe('args');
    const params = model.argsVisits[1]!;
    expect(params.children).toEqual(["['frozen']", "['layers']", "['scale']"]);
    const frozen = model.argsVisits.find((v) => v.keypath === "[0]['frozen']")!;
    expect(ownKey(frozen, model.argsVisits, 'args')).toBe("['frozen']");
    expect(frozen.registration).toBe('None');
    expect(visitSentence(frozen)).toContain('no children');
  });

  it('the leaves table follows the key paths, with avals, and maps to the invars', () => {
    const rows = leafRows(model.args!);
    expect(rows.map((r) => r.keypath)).toEqual(model.args!.keypaths);
    expect(rows[0]).toMatchObject({ index: 0, keypath: "[0]['layers'][0].w", aval: 'f32[2,3]' });
    const names = invarNames(model.jaxpr, model.args);
    expect(names.length).toBe(rows.length);
    expect(names[0]).toBe(model.jaxpr!.jaxpr.invars[0]!.name);
  });

  it('the stepper: a prefix of the events makes the last visit current, the rest pending', () => {
    const firstVisits = events.findIndex((e) => e.type === 'pytree_node_visited');
    const prefix = events.slice(0, firstVisits + 3);
    const m = pytreeModel(prefix, events);
    expect(m.current?.index).toBe(2);
    expect(visitState(m.argsVisits[1]!, m.current, m.reached)).toBe('done');
    expect(visitState(m.argsVisits[2]!, m.current, m.reached)).toBe('current');
    expect(visitState(m.argsVisits[3]!, m.current, m.reached)).toBe('pending');
    const next = neighbour(m.argsVisits, m.current, 1);
    expect(next).toEqual({ tree: 'args', index: 3 });
    const picked = pytreeModel(prefix, events, next);
    expect(picked.current?.index).toBe(3);
    expect(neighbour(m.argsVisits, m.argsVisits[0], -1)).toEqual({ tree: 'args', index: 0 });
  });

  it('describes dataclass nodes with their aux data', () => {
    const dense = model.argsVisits.find((v) => v.registration === 'register_dataclass')!;
    expect(visitSentence(dense)).toContain("('tanh',)");
    expect(registrationText('register_static')).toContain('no children');
  });
});

describe('compare_retrace: a tuple in args where other has a list', () => {
  const events = load('compare_retrace');
  const model = pytreeModel(events, events);

  it('reads both trees and the first difference', () => {
    expect(model.otherVisits.length).toBe(model.other?.num_nodes);
    expect(model.compared?.equal).toBe(false);
    expect(model.compared?.keypath).toBe("[0]['hist']");
    expect(model.compared?.kind).toBe('type');
    expect(model.compared?.jax_error).toContain('pytree structure error');
  });

  it('highlights the differing node and its subtree only', () => {
    const path = model.compared!.keypath;
    const marked = model.argsVisits.filter((v) => inDiff(v.keypath, path)).map((v) => v.keypath);
    expect(marked).toEqual(["[0]['hist']", "[0]['hist'][0]", "[0]['hist'][1]"]);
    expect(inDiff("[0]['w']", path)).toBe(false);
    expect(inDiff("[0]['w']", null)).toBe(false);
  });

  it('steps from the last args node into other', () => {
    const all = [...model.argsVisits, ...model.otherVisits];
    const last = model.argsVisits.at(-1)!;
    expect(neighbour(all, last, 1)).toEqual({ tree: 'other', index: 0 });
    const m = pytreeModel(events, events, { tree: 'other', index: 0 });
    expect(visitState(model.argsVisits[0]!, m.current, m.reached)).toBe('done');
  });
});

describe('none_is_leaf: is_leaf asked first on every node', () => {
  const events = load('none_is_leaf');
  const model = pytreeModel(events, events);

  it('every visit records is_leaf, and None comes back as a leaf', () => {
    expect(model.argsVisits.every((v) => v.is_leaf_result !== null)).toBe(true);
    const none = model.argsVisits.find((v) => v.registration === 'is_leaf')!;
    expect(none.keypath).toBe("[1]['b']");
    expect(visitSentence(none)).toMatch(/^is_leaf\(\[1\]\['b'\]\) → True, asked first\./);
    expect(visitSentence(model.argsVisits[0]!)).toContain('is_leaf(the root) → False');
    expect(model.args?.keypaths).toContain("[1]['b']");
  });
});

describe('visitsOmitted: the tree picture says when the probe cut the visits', () => {
  const events = load('nested_params');
  const model = pytreeModel(events, events);

  it('is 0 when every node is drawn, else num_nodes minus the visits drawn', () => {
    const n = model.args?.num_nodes ?? 0;
    expect(n).toBeGreaterThan(3);
    expect(visitsOmitted(model.argsVisits, model.args)).toBe(0);
    expect(visitsOmitted(model.argsVisits.slice(0, 3), model.args)).toBe(n - 3);
    expect(visitsOmitted(model.argsVisits, undefined)).toBe(0);
  });
});
