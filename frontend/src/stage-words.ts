/**
 * How the page names a run's stage (the run bar's progress, the error panel's "during ..."):
 * JAX's stages by their own names; the PyTorch/XLA exhibits' by torch_xla's words (issue 31,
 * item 5: a torch run is not traced, lowered and compiled as a jit is). The stages are the
 * protocol's `Stage` (backend/jaxscope/protocol.py says what each torch stage holds).
 */
import type { Stage } from './protocol';

export const STAGE_WORDS: Readonly<Record<Stage, string>> = {
  load: 'load',
  trace: 'trace',
  lower: 'lower',
  compile: 'compile',
  run: 'run',
  call: 'call',
  client: 'PJRT client',
  lazy_trace: 'lazy tracing',
  sync: 'sync (compile, execute)',
  steps: 'training steps (lazy tracing, sync)',
};

export function stageWords(stage: Stage): string {
  return STAGE_WORDS[stage] ?? stage;
}
