import type { ComponentChildren, TargetedMouseEvent } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { scopeNames } from './access';
import { ApiError } from './api';
import { BASE, navigate } from './router';

/** An in-console link: a real `<a href>` (open in a new tab works), navigated on the client. */
export function Link(props: { to: string; children: ComponentChildren; class?: string; current?: boolean }) {
  const onClick = (e: TargetedMouseEvent<HTMLAnchorElement>): void => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(props.to);
  };
  return (
    <a
      href={`${BASE}${props.to}`}
      onClick={onClick}
      class={props.class}
      aria-current={props.current ? 'page' : undefined}
    >
      {props.children}
    </a>
  );
}

/** The page heading; focused on mount so a route change is announced and keyboard focus starts at the page. */
export function PageTitle(props: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    ref.current?.focus();
  }, []);
  return (
    <h1 tabIndex={-1} ref={ref}>
      {props.children}
    </h1>
  );
}

export function errorText(err: unknown): string {
  if (err instanceof ApiError && err.requiredScopes.length > 0) {
    const n = err.requiredScopes.length === 1 ? 'scope' : 'scopes';
    return `Not allowed: this needs the ${n} ${scopeNames(err.requiredScopes)}, which your credential lacks (HTTP ${err.status}).`;
  }
  if (err instanceof ApiError) return `${err.message}${err.status ? ` (HTTP ${err.status})` : ''}`;
  if (err instanceof Error) return err.message;
  return String(err);
}

export function ErrorBox(props: { error: unknown }) {
  if (!props.error) return null;
  const scoped = props.error instanceof ApiError && props.error.requiredScopes.length > 0;
  return (
    <p class="error" role="alert" data-testid={scoped ? 'missing-scope' : undefined}>
      {errorText(props.error)}
    </p>
  );
}

/** In place of a page or control the credential may not use: what it needs, named. */
export function NotAllowed(props: { what: string; scopes: readonly string[] }) {
  const n = props.scopes.length === 1 ? 'scope' : 'scopes';
  return (
    <p class="notice" data-testid="not-allowed">
      {props.what} needs the {n} <code>{scopeNames(props.scopes)}</code>, which your credential lacks.
    </p>
  );
}

/** Loads once per `deps` change; `reload()` loads again. */
export function useLoad<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: unknown[],
): { data: T | undefined; error: unknown; loading: boolean; reload: () => void; set: (data: T) => void } {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, loading: false }),
      (error: unknown) => !ctl.signal.aborted && setState({ error, loading: false }),
    );
    return () => ctl.abort();
  }, [...deps, tick]);
  return {
    data: state.data,
    error: state.error,
    loading: state.loading,
    reload: () => setTick((n) => n + 1),
    // What the server answered a change with: shown at once, with no second read that could land later.
    set: (data: T) => setState({ data, loading: false }),
  };
}

/** A block of text with a Copy button (clipboard where the browser allows it; the text is selectable anyway). */
export function Copyable(props: { label: string; text: string; secret?: boolean }) {
  const [copied, setCopied] = useState(false);
  const copy = (): void => {
    navigator.clipboard?.writeText(props.text).then(
      () => {
        setCopied(true);
        setTimeout(() => setCopied(false), 1500);
      },
      () => setCopied(false),
    );
  };
  return (
    <div class={props.secret ? 'copyable secret' : 'copyable'}>
      <div class="copyable-head">
        <span>{props.label}</span>
        <button type="button" class="small" onClick={copy} aria-label={`Copy ${props.label}`}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      <pre tabIndex={0} aria-label={props.label}>
        <code>{props.text}</code>
      </pre>
    </div>
  );
}

/**
 * A task's or context's id in a few characters: its last eight. Arbiter's task and context ids begin with their
 * creation time (time-ordered UUIDs), so their first characters are the same for every id of the same minute;
 * their end is random, as it is for a client's own ids.
 */
export const shortId = (id: string): string => id.slice(-8);

export function StateBadge(props: { state: string }) {
  return <span class={`badge state-${props.state}`}>{props.state}</span>;
}

export function When(props: { at: string | null | undefined }) {
  if (!props.at) return <span class="muted">—</span>;
  const d = new Date(props.at);
  return <time dateTime={props.at}>{d.toLocaleString()}</time>;
}

/** Cursor paging: a stack of the cursors that led to each page, so Previous works without a server-side back link. */
export function usePager(resetKey: string) {
  const [stack, setStack] = useState<string[]>([]);
  useEffect(() => setStack([]), [resetKey]);
  const cursor = stack[stack.length - 1];
  return {
    cursor,
    page: stack.length + 1,
    next: (c: string) => setStack((s) => [...s, c]),
    prev: () => setStack((s) => s.slice(0, -1)),
    first: () => setStack([]),
  };
}

export function Pager(props: { pager: ReturnType<typeof usePager>; nextCursor: string | null | undefined }) {
  const { pager, nextCursor } = props;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" onClick={pager.first} disabled={pager.page === 1}>
        First
      </button>
      <button type="button" onClick={pager.prev} disabled={pager.page === 1}>
        Previous
      </button>
      <span aria-live="polite">Page {pager.page}</span>
      <button type="button" onClick={() => nextCursor && pager.next(nextCursor)} disabled={!nextCursor}>
        Next
      </button>
    </nav>
  );
}
