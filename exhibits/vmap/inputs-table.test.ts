/**
 * The vmap inputs table puts the mapped inputs first and folds many unmapped ones into one row
 * (every leaf still reachable: the row opens them). A review of gpt_stack under vmap axes saw 148
 * "not mapped" parameter rows before the two mapped inputs (3,894 px). Fixture per_example_loss
 * (in_axes (None, 0, 0): params' two leaves unmapped, then x and y), and the same event with
 * 148 parameter leaves.
 */
import { describe, expect, it } from "vitest";
import type { Event } from "../../frontend/src/protocol";
import { fixtureLoader } from "../../frontend/src/test/fixtures";
import { renderView } from "../../frontend/src/test/render-view";
import View from "./View.svelte";
import { UNMAPPED_GROUP_MIN, inputTable, unmappedText, vmapModel, type VmapInputsMapped } from "./view-model";

const load = fixtureLoader(import.meta.url);

function withParams(events: readonly Event[], n: number): Event[] {
  return events.map((e) => {
    if (e.type !== "vmap_inputs_mapped") return e;
    const m = structuredClone(e) as VmapInputsMapped;
    const leaf = m.inputs[0]!;
    const params = Array.from({ length: n }, (_, i) => ({ ...leaf, path: `args[0]['p${String(i).padStart(3, "0")}']` }));
    m.inputs = [...params, ...m.inputs.filter((x) => x.bdim != null)];
    return m as Event;
  });
}

function html(events: Event[]): string {
  return renderView(View, events);
}

const rowIds = (h: string): string[] => [...h.matchAll(/data-testid="vmap-input-(\d+)"/g)].map((m) => m[1]!);

describe("the vmap inputs table", () => {
  const events = load("per_example_loss");
  const inputs = vmapModel(events, events, null).inputs!.inputs;

  it("lists the mapped inputs first, each keeping its own index", () => {
    expect(inputs.map((i) => i.bdim)).toEqual([null, null, 0, 0]);
    const t = inputTable(inputs);
    expect(t.first.map((r) => [r.index, r.inp.path])).toEqual([
      [2, "args[1]"],
      [3, "args[2]"],
    ]);
    expect(t.unmapped.map((r) => r.index)).toEqual([0, 1]);
    expect(t.grouped).toBe(false);
    // two unmapped leaves are shown as rows, after the mapped ones
    expect(rowIds(html(events))).toEqual(["2", "3", "0", "1"]);
  });

  it("folds 148 unmapped parameter leaves into one row that opens them", () => {
    const many = withParams(events, 148);
    const t = inputTable(vmapModel(many, many, null).inputs!.inputs);
    expect(t.first.map((r) => r.inp.path)).toEqual(["args[1]", "args[2]"]);
    expect(t.unmapped).toHaveLength(148);
    expect(t.grouped).toBe(true);
    expect(unmappedText(148)).toBe("148 inputs not mapped (in_axes None): shared by every example");
    const h = html(many);
    expect(rowIds(h)).toEqual(["148", "149"]);
    expect(h).toContain('data-testid="vmap-unmapped-toggle"');
    expect(h).toContain("148 inputs not mapped (in_axes None)");
    expect(UNMAPPED_GROUP_MIN).toBeLessThanOrEqual(148);
  });
});
