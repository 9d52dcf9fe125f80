/**
 * The single-file build of the frontend (design 0034): the same app as `vite.config.ts`, with
 * every script and stylesheet inlined into one HTML file by `vite-plugin-singlefile`. It is the
 * template of a standalone file (a recorded run that opens from disk with no server): `jaxscope
 * run --html`, `jaxscope.show` in a notebook and the page's Download button add the recording to
 * it. Output: `frontend/dist/standalone/index.html` (`npm run build` runs this after the main
 * build; `$JAXSCOPE_STANDALONE_OUT` sends it elsewhere, e.g. beside a private e2e build).
 *
 * The dataflow graph's layout worker is a separate file that a standalone file cannot carry; the
 * graph lays out on the main thread when the worker cannot start (`DataflowGraph.svelte`).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig, mergeConfig } from 'vite';
import { viteSingleFile } from 'vite-plugin-singlefile';
import base from './vite.config.ts';

const outDir = process.env['JAXSCOPE_STANDALONE_OUT'] ?? fileURLToPath(new URL('./dist/standalone', import.meta.url));

export default mergeConfig(
  base,
  defineConfig({
    plugins: [viteSingleFile()],
    build: { outDir, emptyOutDir: true },
  }),
);
