import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_RETRY_AFTER_MS, errorForStatus } from '../../src/orchestrator/providers/provider.js';
import { parseHttpDate, parseRetryAfter } from '../../src/orchestrator/providers/retry-after.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const h = (init: Record<string, string>) => new Headers(init);

describe('Retry-After (RFC 9110 §10.2.3) and retry-after-ms', () => {
  it('delta-seconds', () => {
    assert.equal(parseRetryAfter(h({ 'retry-after': '0' }), NOW), 0);
    assert.equal(parseRetryAfter(h({ 'retry-after': '7' }), NOW), 7000);
    assert.equal(parseRetryAfter(h({ 'retry-after': ' 2 ' }), NOW), 2000);
    assert.equal(parseRetryAfter(h({ 'retry-after': '1.5' }), NOW), 1500);
  });

  it('an HTTP-date in each of its three forms; a past date is 0', () => {
    assert.equal(parseRetryAfter(h({ 'retry-after': 'Sun, 01 Mar 2026 12:00:05 GMT' }), NOW), 5000);
    assert.equal(parseRetryAfter(h({ 'retry-after': 'Sunday, 01-Mar-26 12:00:09 GMT' }), NOW), 9000);
    assert.equal(parseRetryAfter(h({ 'retry-after': 'Sun Mar  1 12:00:03 2026' }), NOW), 3000);
    assert.equal(parseRetryAfter(h({ 'retry-after': 'Sun, 01 Mar 2026 11:59:00 GMT' }), NOW), 0);
    assert.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'), Date.UTC(1994, 10, 6, 8, 49, 37));
  });

  it('retry-after-ms wins over Retry-After', () => {
    assert.equal(parseRetryAfter(h({ 'retry-after-ms': '1500' }), NOW), 1500);
    assert.equal(parseRetryAfter(h({ 'retry-after-ms': '250.4', 'retry-after': '9' }), NOW), 251);
    // An unreadable retry-after-ms falls back to Retry-After.
    assert.equal(parseRetryAfter(h({ 'retry-after-ms': 'soon', 'retry-after': '2' }), NOW), 2000);
  });

  it('absent or unreadable: undefined (the caller backs off on its own)', () => {
    for (const v of ['', '-1', 'soon', 'foo 1', 'Tue 3', '2026-03-01T12:00:05Z', '1e3']) {
      assert.equal(parseRetryAfter(h(v ? { 'retry-after': v } : {}), NOW), undefined, JSON.stringify(v));
    }
  });
});

describe('errorForStatus', () => {
  it('429 and 5xx are retryable and carry the wait; 4xx are not', () => {
    const limited = errorForStatus('openai', 429, 2000);
    assert.deepEqual([limited.code, limited.retryable, limited.retryAfterMs], ['rate_limited', true, 2000]);
    const down = errorForStatus('openai', 503);
    assert.deepEqual([down.code, down.retryable, down.retryAfterMs], ['provider_error', true, undefined]);
    assert.equal(errorForStatus('openai', 401).code, 'auth_failed');
    assert.equal(errorForStatus('openai', 404).code, 'model_unavailable');
    assert.equal(errorForStatus('openai', 400).retryable, false);
  });

  it(`a wait longer than ${MAX_RETRY_AFTER_MS / 1000} s is not waited for: the call fails at once`, () => {
    assert.equal(errorForStatus('openai', 429, MAX_RETRY_AFTER_MS).retryable, true);
    const e = errorForStatus('openai', 429, MAX_RETRY_AFTER_MS + 1);
    assert.equal(e.code, 'rate_limited');
    assert.equal(e.retryable, false);
    assert.match(e.message, /asked for a wait of 31 s, longer than Arbiter waits \(30 s\)/);
  });
});
