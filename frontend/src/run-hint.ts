/**
 * The line a page shows before the first run: what pressing Run does with the snippet, which
 * depends on the kind of worker that runs the exhibit (its registry entry's `worker`, carried to
 * `gen/exhibits.ts` by `npm run gen`). A PyTorch/XLA exhibit runs the snippet with torch_xla, not
 * JAX; the TF bridge runs it through TensorFlow and JAX.
 */
import { EXHIBIT_TABLE, type WorkerKind } from './gen/exhibits';

/** What Run does with the snippet, by worker kind (follows "Press Run (Ctrl/Cmd+Enter) "). */
export const RUN_HINTS: Readonly<Record<WorkerKind, string>> = {
  jax: 'to trace this snippet with JAX.',
  torch: 'to run this snippet with PyTorch/XLA.',
  tf: 'to run this snippet through TensorFlow and JAX (jax2tf and tf2jax).',
  tpu_compile: 'to compile this snippet for a TPU v5e (JAX with libtpu; no TPU needed).',
  accelerator: "to run this snippet with JAX on this machine's accelerator.",
};

/** The hint for exhibit `id` (an id this frontend does not know: the JAX one). */
export function runHint(id: string): string {
  const worker = Object.hasOwn(EXHIBIT_TABLE, id) ? EXHIBIT_TABLE[id]?.worker : undefined;
  return RUN_HINTS[worker ?? 'jax'];
}
