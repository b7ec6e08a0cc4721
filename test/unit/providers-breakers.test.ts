import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { CircuitState } from 'cockatiel';
import { ProviderBreakers } from '../../src/orchestrator/providers/provider-breakers.js';
import {
  ProviderError,
  type CompletionEvent,
  type CompletionRequest,
  type Provider,
} from '../../src/orchestrator/providers/provider.js';

/** What one call of the fake does: answer, fail before any text, fail after some, or stream until released. */
type Step = 'ok' | ProviderError | { textThen: ProviderError } | { holdUntil: Promise<void> };

/** A hand-written provider: each call takes the next step of its script (the last one repeats). */
class ScriptedProvider implements Provider {
  readonly name = 'fake';
  calls = 0;
  constructor(
    readonly baseUrl: string,
    private readonly steps: Step[],
  ) {}

  async *complete(): AsyncGenerator<CompletionEvent> {
    const step = this.steps[Math.min(this.calls, this.steps.length - 1)];
    this.calls++;
    if (step instanceof ProviderError) throw step;
    yield { type: 'text', delta: 'hello' };
    if (step === 'ok') {
      yield { type: 'stop', reason: 'stop' };
      return;
    }
    if ('textThen' in step) throw step.textThen;
    await step.holdUntil;
    yield { type: 'stop', reason: 'stop' };
  }
}

const req = (model: string): CompletionRequest => ({
  model,
  system: '',
  messages: [{ role: 'user', content: 'hi' }],
  maxTokens: 10,
  temperature: 0,
});
const fault = () => new ProviderError('provider_error', 'fake failed (HTTP 500)', true);
const limited = () => new ProviderError('rate_limited', 'fake is rate limiting (HTTP 429)', true, 0);

async function drain(gen: AsyncIterable<CompletionEvent>): Promise<CompletionEvent[]> {
  const out: CompletionEvent[] = [];
  for await (const ev of gen) out.push(ev);
  return out;
}

/** Runs one call and returns its error code ('ok' when it succeeded). */
async function outcome(b: ProviderBreakers, p: Provider, model: string): Promise<string> {
  try {
    await drain(b.call(p, req(model), new AbortController().signal));
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof ProviderError, String(err));
    return err.code;
  }
}

describe('ProviderBreakers (per provider, base URL and model; cockatiel underneath)', () => {
  const opts = { threshold: 3, halfOpenAfterMs: 30_000, maxBreakers: 100 };
  beforeEach(() => mock.timers.enable({ apis: ['Date'] }));
  afterEach(() => mock.timers.reset());

  it('faults in a row open the breaker of that model: calls fail at once, without reaching the provider', async () => {
    const b = new ProviderBreakers(opts);
    const p = new ScriptedProvider('http://a', [fault()]);
    for (let i = 0; i < 3; i++) assert.equal(await outcome(b, p, 'm1'), 'provider_error');
    assert.equal(b.state(p, 'm1'), CircuitState.Open);
    const err = await drain(b.call(p, req('m1'), new AbortController().signal)).catch((e: unknown) => e);
    assert.ok(err instanceof ProviderError);
    assert.equal(err.code, 'provider_unavailable');
    assert.match(
      err.message,
      /^fake model 'm1' is failing \(last error: provider_error\); not calling it for a while$/,
    );
    assert.equal(p.calls, 3);
  });

  it('other models, and the same model at another base URL, have breakers of their own', async () => {
    const b = new ProviderBreakers(opts);
    const broken = new ScriptedProvider('http://a', [fault()]);
    for (let i = 0; i < 3; i++) await outcome(b, broken, 'm1');
    assert.equal(await outcome(b, new ScriptedProvider('http://a', ['ok']), 'm2'), 'ok');
    assert.equal(await outcome(b, new ScriptedProvider('http://b', ['ok']), 'm1'), 'ok');
  });

  it('429s never open a breaker, however many; nor does a caller that stops reading', async () => {
    const b = new ProviderBreakers(opts);
    const p = new ScriptedProvider('http://a', [limited()]);
    for (let i = 0; i < 10; i++) assert.equal(await outcome(b, p, 'm1'), 'rate_limited');
    assert.equal(b.state(p, 'm1'), CircuitState.Closed);
    assert.equal(p.calls, 10);
    const slow = new ScriptedProvider('http://a', [{ holdUntil: new Promise<void>(() => undefined) }]);
    for (let i = 0; i < 5; i++) {
      for await (const _ of b.call(slow, req('m2'), new AbortController().signal)) break;
    }
    assert.equal(b.state(slow, 'm2'), CircuitState.Closed);
  });

  it('a stream that fails after some text is a fault too; a success resets the count', async () => {
    const b = new ProviderBreakers(opts);
    const p = new ScriptedProvider('http://a', [
      { textThen: fault() },
      { textThen: fault() },
      'ok',
      { textThen: fault() },
    ]);
    for (let i = 0; i < 4; i++) await outcome(b, p, 'm1');
    assert.equal(b.state(p, 'm1'), CircuitState.Closed, 'two faults, a success, one fault');
    await outcome(b, p, 'm1');
    await outcome(b, p, 'm1');
    assert.equal(b.state(p, 'm1'), CircuitState.Open);
  });

  it('half-open: after the wait one probe goes through and others fail at once; its success closes the breaker', async () => {
    const b = new ProviderBreakers(opts);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const p = new ScriptedProvider('http://a', [fault(), fault(), fault(), { holdUntil: held }, 'ok']);
    for (let i = 0; i < 3; i++) await outcome(b, p, 'm1');
    mock.timers.tick(29_000);
    assert.equal(await outcome(b, p, 'm1'), 'provider_unavailable', 'still open');
    mock.timers.tick(1_000);
    const probe = drain(b.call(p, req('m1'), new AbortController().signal));
    await new Promise((r) => setImmediate(r));
    assert.equal(b.state(p, 'm1'), CircuitState.HalfOpen);
    assert.equal(await outcome(b, p, 'm1'), 'provider_unavailable', 'a second caller does not wait for the probe');
    assert.equal(p.calls, 4, 'only the probe reached the provider');
    release();
    assert.equal((await probe).length, 2);
    assert.equal(b.state(p, 'm1'), CircuitState.Closed);
    assert.equal(await outcome(b, p, 'm1'), 'ok');
  });

  it('half-open: a failed probe opens the breaker again', async () => {
    const b = new ProviderBreakers(opts);
    const p = new ScriptedProvider('http://a', [fault()]);
    for (let i = 0; i < 3; i++) await outcome(b, p, 'm1');
    mock.timers.tick(30_000);
    assert.equal(await outcome(b, p, 'm1'), 'provider_error', 'the probe reached the provider');
    assert.equal(b.state(p, 'm1'), CircuitState.Open);
    assert.equal(await outcome(b, p, 'm1'), 'provider_unavailable');
    assert.equal(p.calls, 4);
  });

  it('keeps at most maxBreakers, forgetting the least recently used closed one first', async () => {
    const b = new ProviderBreakers({ ...opts, maxBreakers: 2 });
    const broken = new ScriptedProvider('http://a', [fault()]);
    for (let i = 0; i < 3; i++) await outcome(b, broken, 'open-one');
    const ok = new ScriptedProvider('http://a', ['ok']);
    await outcome(b, ok, 'm1');
    await outcome(b, ok, 'm2'); // forgets m1 (closed), not the older open-one
    assert.equal(b.state(broken, 'open-one'), CircuitState.Open);
    assert.equal(await outcome(b, broken, 'open-one'), 'provider_unavailable');
  });
});
