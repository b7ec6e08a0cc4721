import type { IncomingMessage, ServerResponse } from 'node:http';

/** A middleware in the Express shape (helmet's). */
type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** Response headers as `[name, value]` pairs, set on every answer of a route family. */
export type HeaderList = readonly (readonly [string, string])[];

/**
 * The headers a header-only middleware sets, read once by running it on a
 * stand-in response. helmet's headers depend only on its options, never on
 * the request, so they are computed at start-up and every answer gets the
 * same list — instead of a dozen middleware calls per request. helmet stays
 * the source of truth: a new helmet version or option changes the list.
 */
export function captureHeaders(middleware: Middleware): HeaderList {
  const set = new Map<string, [string, string]>();
  const res = {
    setHeader(name: string, value: string | number | readonly string[]) {
      set.set(name.toLowerCase(), [name, Array.isArray(value) ? value.join(', ') : String(value)]);
      return res;
    },
    removeHeader(name: string) {
      set.delete(name.toLowerCase());
    },
    getHeader(name: string) {
      return set.get(name.toLowerCase())?.[1];
    },
  };
  let done = false;
  let failure: unknown;
  middleware({ headers: {}, method: 'GET', url: '/' } as IncomingMessage, res as unknown as ServerResponse, (err) => {
    done = true;
    failure = err;
  });
  if (!done) throw new Error('the header middleware did not complete synchronously');
  if (failure) throw failure instanceof Error ? failure : new Error('the header middleware failed');
  return [...set.values()];
}

/** Sets `headers` on `res` (an Express route's answer; the A2A HTTP controller passes the list to `writeHead`). */
export function setHeaders(res: ServerResponse, headers: HeaderList): void {
  for (const [name, value] of headers) res.setHeader(name, value);
}
