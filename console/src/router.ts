import { useEffect, useState } from 'preact/hooks';

/** The console's routes live under `/console/`; the server answers every such path with index.html. */
export const BASE = '/console';

export function currentPath(): string {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return p.replace(/\/+$/, '') || '/';
}

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false): void {
  const url = `${BASE}${to}`;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const l of listeners) l();
  // The new page's heading takes focus (see `PageTitle`), so keyboard and screen-reader users land on it.
}

/** The current route path (without `/console`) and search string; re-renders on navigation and back/forward. */
export function useRoute(): { path: string; search: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = (): void => setTick((n) => n + 1);
    listeners.add(l);
    window.addEventListener('popstate', l);
    return () => {
      listeners.delete(l);
      window.removeEventListener('popstate', l);
    };
  }, []);
  return { path: currentPath(), search: new URLSearchParams(location.search) };
}

/** Matches `pattern` (`/agents/:id`) against `path`; the decoded params, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split('/');
  const b = path.split('/');
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    const seg = a[i] ?? '';
    const val = b[i] ?? '';
    if (seg.startsWith(':')) {
      try {
        out[seg.slice(1)] = decodeURIComponent(val);
      } catch {
        return null;
      }
    } else if (seg !== val) return null;
  }
  return out;
}
