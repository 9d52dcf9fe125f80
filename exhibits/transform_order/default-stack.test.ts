/**
 * Before Run, "Your stack" shows the stack the run will evaluate: the options' stack, else the
 * probe's default (probe.py DEFAULT_STACK, vmap(grad(f))), said to be the default; a review saw
 * just `f` before Run, then `vmap(grad(f))` evaluated without a word.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { render } from "svelte/server";
import { describe, expect, it } from "vitest";
import { EMPTY_SELECTION } from "../../frontend/src/exhibit-api";
import { defaultRunOptions } from "../../frontend/src/protocol";
import View from "./View.svelte";
import { DEFAULT_STACK, shownStack, stackSource } from "./view-model";

const PROBE = readFileSync(fileURLToPath(new URL("./probe.py", import.meta.url)), "utf8");

function chipsOf(html: string): string[] {
  return [...html.matchAll(/data-chip="([^"]+)"/g)].map((m) => m[1]!);
}

function renderBefore(stack: string[] | null): string {
  const options = { ...defaultRunOptions(), stack } as ReturnType<typeof defaultRunOptions>;
  const props = {
    events: [],
    allEvents: [],
    running: false,
    options,
    selection: EMPTY_SELECTION,
    select: () => {},
    rerun: () => {},
  };
  return render(View, { props }).body;
}

describe("the stack shown before a run", () => {
  it("is the probe's DEFAULT_STACK", () => {
    const m = /^DEFAULT_STACK: tuple\[str, \.\.\.\] = \(([^)]*)\)$/m.exec(PROBE);
    expect(m).not.toBeNull();
    const probe = [...m![1]!.matchAll(/"([a-z_]+)"/g)].map((x) => x[1]);
    expect([...DEFAULT_STACK]).toEqual(probe);
    expect(shownStack(null)).toEqual(probe);
    expect(stackSource(null)).toBe("default");
    expect(stackSource(["jit"])).toBe("options");
  });

  it("renders the default's chips and says Run evaluates them", () => {
    const html = renderBefore(null);
    expect(chipsOf(html)).toEqual(["vmap", "grad"]);
    expect(html).toContain('data-testid="stack-default"');
    expect(html).toContain("vmap(grad(f))");
  });

  it("renders the options' stack as it is, without the default note", () => {
    const html = renderBefore(["jit", "grad"]);
    expect(chipsOf(html)).toEqual(["jit", "grad"]);
    expect(html).not.toContain('data-testid="stack-default"');
  });
});
