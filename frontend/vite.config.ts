/**
 * Vite + vitest configuration of the jaxscope shell.
 *
 * The root is `frontend/` (index.html); `.svelte` views under `../exhibits/` are part of the same
 * build and resolve their packages from the repository root's node_modules. The build goes to
 * `frontend/dist/`, which `jaxscope serve` serves. The dev server proxies `/api` (REST and the
 * websocket) to a running `jaxscope serve` ($JAXSCOPE_DEV_BACKEND, default 127.0.0.1:8000).
 */
import { fileURLToPath } from 'node:url';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'vitest/config';

const frontendDir = fileURLToPath(new URL('.', import.meta.url));
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const backend = process.env['JAXSCOPE_DEV_BACKEND'] ?? 'http://127.0.0.1:8000';

export default defineConfig({
  root: frontendDir,
  base: './',
  plugins: [svelte()],
  server: {
    fs: { allow: [repoRoot] },
    proxy: { '/api': { target: backend, ws: true, changeOrigin: false } },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // CodeMirror alone is ~460 kB minified; one chunk is fine for a local tool.
    chunkSizeWarningLimit: 1500,
    // Rolldown's "[PLUGIN_TIMINGS]" note (the svelte plugin's share of the build) is printed on
    // every `make serve` that builds, with raw colour codes: noise for a user.
    rolldownOptions: { checks: { pluginTimings: false } },
  },
  test: {
    root: repoRoot,
    include: ['frontend/src/**/*.test.ts', 'exhibits/**/*.test.ts'],
    environment: 'node',
  },
});
