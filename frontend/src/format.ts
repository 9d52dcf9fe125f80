/** Small display formatters of the shell. */

/** Milliseconds as seconds with one decimal (`1.2 s`); negative or NaN input shows `0.0 s`. */
export function formatSeconds(ms: number): string {
  const s = Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0;
  return `${s.toFixed(1)} s`;
}
