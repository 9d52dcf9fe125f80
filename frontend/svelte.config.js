// Svelte options for vite-plugin-svelte and svelte-check. Svelte 5 compiles `<script lang="ts">`
// (type annotations only) without a preprocessor, so nothing is needed beyond the defaults.
export default {};
