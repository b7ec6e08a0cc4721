import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/app-config.js';
import { MODEL_PROVIDERS, routeModel } from '../../src/config/model-routes.js';
import { ModelRouter } from '../../src/orchestrator/providers/model-router.service.js';
import { Metrics } from '../../src/metrics/metrics.service.js';
import {
  ProviderError,
  type CompletionEvent,
  type CompletionRequest,
  type Provider,
} from '../../src/orchestrator/providers/provider.js';

const req: CompletionRequest = {
  model: 'm',
  system: '',
  messages: [{ role: 'user', content: 'hi' }],
  maxTokens: 10,
  temperature: 0,
};

/** A hand-written provider whose every call runs `fn` (given the call number). */
class FnProvider implements Provider {
  readonly name = 'fake';
  readonly baseUrl = 'http://fake';
  calls = 0;
  constructor(private readonly fn: (call: number) => AsyncGenerator<CompletionEvent>) {}
  complete(): AsyncGenerator<CompletionEvent> {
    return this.fn(++this.calls);
  }
}

async function drain(gen: AsyncIterable<CompletionEvent>): Promise<string> {
  let text = '';
  for await (const ev of gen) if (ev.type === 'text') text += ev.delta;
  return text;
}

const router = () =>
  new ModelRouter(
    loadConfig({
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      ANTHROPIC_API_KEY: 'sk-ant-unit-0001',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
      OPENROUTER_API_KEY: 'sk-or-unit',
      OPENROUTER_BASE_URL: 'http://127.0.0.1:9/api/v1',
    }),
    new Metrics(),
  );

describe('model routing: one table for the config check and the router', () => {
  it('routeModel: prefixes, bare names, echo; null for anything else', () => {
    assert.deepEqual(routeModel('echo'), { kind: 'echo' });
    assert.deepEqual(routeModel('openrouter/meta/llama'), {
      kind: 'provider',
      provider: 'openrouter',
      model: 'meta/llama',
    });
    assert.deepEqual(routeModel('claude-haiku'), { kind: 'provider', provider: 'anthropic', model: 'claude-haiku' });
    assert.deepEqual(routeModel('o4-mini'), { kind: 'provider', provider: 'openai', model: 'o4-mini' });
    for (const p of MODEL_PROVIDERS)
      assert.deepEqual(routeModel(`${p}/x`), { kind: 'provider', provider: p, model: 'x' });
    for (const bad of ['foo/bar', 'llama3', 'openai/', '/gpt-4o', 'gpt-4o/x', 'echo2'])
      assert.equal(routeModel(bad), null, bad);
  });

  it('ModelRouter.resolve follows it, naming what is configured when it cannot', () => {
    const r = router();
    const t = r.resolve('openrouter/meta/llama');
    assert.ok(t.kind === 'provider');
    assert.equal(t.provider.name, 'openrouter');
    assert.equal(t.provider.baseUrl, 'http://127.0.0.1:9/api/v1');
    assert.equal(t.model, 'meta/llama');
    const bare = r.resolve('o3-mini');
    assert.ok(bare.kind === 'provider' && bare.provider.name === 'openai');
    assert.throws(
      () => r.resolve('foo/bar'),
      (e: unknown) =>
        e instanceof ProviderError &&
        e.code === 'model_unavailable' &&
        /^unknown model 'foo\/bar'; use echo, /.test(e.message),
    );
    const bareConfig = new ModelRouter(loadConfig({}), new Metrics());
    assert.throws(
      () => bareConfig.resolve('anthropic/claude-x'),
      /needs the anthropic provider, which is not configured; configured: echo, ollama/,
    );
  });
});

describe('ModelRouter.stream: retries', () => {
  it('at most 3 attempts, each after the wait the provider asked for', async () => {
    const p = new FnProvider(async function* () {
      yield* [];
      throw new ProviderError('rate_limited', 'fake is rate limiting (HTTP 429)', true, 0);
    });
    await assert.rejects(drain(router().stream(p, req, new AbortController().signal)), { code: 'rate_limited' });
    assert.equal(p.calls, 3);
  });

  it('never after text has reached the caller', async () => {
    const p = new FnProvider(async function* () {
      yield { type: 'text', delta: 'The answer is' };
      throw new ProviderError('provider_error', 'fake ended the stream early', true);
    });
    await assert.rejects(drain(router().stream(p, req, new AbortController().signal)), { code: 'provider_error' });
    assert.equal(p.calls, 1);
  });

  it('a retry that succeeds hands on only its own text', async () => {
    const p = new FnProvider(async function* (call) {
      if (call === 1) throw new ProviderError('provider_unavailable', 'fake could not be reached', true, 0);
      yield { type: 'text', delta: 'second time' };
    });
    assert.equal(await drain(router().stream(p, req, new AbortController().signal)), 'second time');
    assert.equal(p.calls, 2);
  });

  it('cancellation ends a 30 s Retry-After wait at once, and no attempt follows', { timeout: 20_000 }, async () => {
    const ac = new AbortController();
    const p = new FnProvider(async function* () {
      yield* [];
      // The abort comes while the router waits out the 30 s this error asks for.
      setImmediate(() => ac.abort(new Error('cancel')));
      throw new ProviderError('rate_limited', 'fake is rate limiting (HTTP 429)', true, 30_000);
    });
    await assert.rejects(drain(router().stream(p, req, ac.signal)), { code: 'cancelled' });
    assert.equal(p.calls, 1);
  });
});
