import { parseSseStream } from '@a2a-js/sdk';
import { ProviderError, errorForStatus } from './provider.js';
import { parseRetryAfter } from './retry-after.js';
import { parseJsonText } from '../../common/json-guard.js';

/** Largest single SSE event accepted from a provider. */
const MAX_EVENT_BYTES = 1024 * 1024;

/**
 * POSTs JSON and yields the SSE events as they arrive (`data` unparsed: how a
 * stream ends is each wire format's business). Connection errors, timeouts
 * and HTTP errors become `ProviderError`s; the provider's error body is never
 * surfaced (it can echo keys back). A 429 or 5xx carries the wait the
 * provider asked for (`Retry-After`, `retry-after-ms`).
 */
export async function* postSse(
  provider: string,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
  timeoutMs: number,
): AsyncGenerator<{ event: string; data: string }> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const both = AbortSignal.any([signal, timeout]);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
      body: JSON.stringify(body),
      signal: both,
      // Never followed: a redirect would carry the key (`x-api-key` is no header fetch drops) to another origin.
      redirect: 'manual',
    });
  } catch {
    throw failure(provider, signal, timeout, 'could not be reached');
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    if (res.status >= 300 && res.status < 400) {
      throw new ProviderError(
        'provider_error',
        `${provider} answered with a redirect (HTTP ${res.status}), which is not followed: check its base URL`,
      );
    }
    throw errorForStatus(provider, res.status, parseRetryAfter(res.headers));
  }
  if (!res.body) throw new ProviderError('provider_error', `${provider} sent an empty response`, true);
  try {
    for await (const ev of parseSseStream(res, MAX_EVENT_BYTES)) yield { event: ev.type, data: ev.data };
  } catch (err) {
    if (err instanceof ProviderError) throw err;
    const f = failure(provider, signal, timeout, 'stream broke off');
    // A stream that breaks off once the response began is the provider's failure, not an outage.
    throw f.code === 'provider_unavailable' ? new ProviderError('provider_error', f.message, true) : f;
  }
}

/** Parses one event's JSON payload; anything else is a malformed stream. */
export function parseChunk(provider: string, data: string): unknown {
  try {
    return parseJsonText(data);
  } catch {
    throw new ProviderError('provider_error', `${provider} sent a malformed stream chunk`);
  }
}

function failure(provider: string, signal: AbortSignal, timeout: AbortSignal, what: string): ProviderError {
  if (signal.aborted) return new ProviderError('cancelled', 'the run was cancelled');
  if (timeout.aborted) return new ProviderError('timeout', `${provider} timed out`, true);
  return new ProviderError('provider_unavailable', `${provider} ${what}`, true);
}
