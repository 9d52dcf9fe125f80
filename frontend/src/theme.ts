/**
 * Light and dark themes: the page follows `prefers-color-scheme` until the user picks one with the
 * toggle; the pick is kept in localStorage. The theme is the `data-theme` attribute of `<html>`,
 * which `app.css` maps to colour variables (CodeMirror reads the same variables).
 */
export type Theme = 'light' | 'dark';

const KEY = 'jaxscope:theme';

export function storedTheme(): Theme | null {
  try {
    const value = localStorage.getItem(KEY);
    return value === 'light' || value === 'dark' ? value : null;
  } catch {
    return null;
  }
}

export function systemTheme(): Theme {
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme(theme: Theme): void {
  document.documentElement.dataset['theme'] = theme;
}

export function storeTheme(theme: Theme): void {
  try {
    localStorage.setItem(KEY, theme);
  } catch {
    // The toggle still works for this page.
  }
}
