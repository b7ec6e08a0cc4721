import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeProvider, type ScriptCall, type ScriptReply } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { a2a } from '../helpers/a2a.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const OPENROUTER_KEY = 'sk-or-test-KEY-0003';

/**
 * Providers that misbehave — streams cut off, 429s with each form of
 * Retry-After, one model failing while another is fine — driven through the
 * real app against a fake provider on loopback.
 */
describe('model providers under faults (cut-off streams, back-pressure, breakers)', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let a: TestTenant;
  let c: TestTenant;

  /** Scripts a model on the fake (requests for it are answered by `fn`). */
  const script = (model: string, fn: (call: ScriptCall) => ScriptReply): void => {
    fake.scripts.set(model, fn);
  };
  const requestsFor = (model: string) => fake.requests.filter((r) => r.body.model === model);
  const ask = async (t: TestTenant, agent: string, text = 'hi') => {
    const body = await a2a(server.url, t.token, agent).send(text);
    assert.ok(body.result?.task, JSON.stringify(body));
    return body.result.task;
  };
  const replyText = (task: any): string =>
    (task.artifacts ?? []).flatMap((x: any) => x.parts.map((p: any) => p.text ?? '')).join('');

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: 'sk-test-openai-KEY-0001',
        ANTHROPIC_BASE_URL: fake.url,
        ANTHROPIC_API_KEY: 'sk-ant-test-KEY-0002',
        OPENROUTER_BASE_URL: `${fake.url}/v1`,
        OPENROUTER_API_KEY: OPENROUTER_KEY,
      },
    });
    a = await newTenant(server, 'resilience-a');
    c = await newTenant(server, 'resilience-c');
  });
  after(async () => {
    await server.close();
    await fake.stop();
  });

  describe('a stream that ends without its end', () => {
    it('openai: text then a clean close (no finish_reason, no [DONE]) fails the task, not retried', async () => {
      script('cut-gpt', () => ({ text: 'The answer is', cutOff: true }));
      await newAgent(a, { id: 'cut-gpt', model: 'openai/cut-gpt' });
      const task = await ask(a, 'cut-gpt');
      assert.equal(task.status.state, 'TASK_STATE_FAILED');
      assert.match(task.metadata['x-arbiter.error'], /^provider_error: openai ended the stream early/);
      // The partial text had reached the client: no second attempt.
      assert.equal(replyText(task), 'The answer is');
      assert.equal(requestsFor('cut-gpt').length, 1);
    });

    it('openai: a stream cut off before any text is retried, and the retry completes', async () => {
      script('cut-early', (call) => (call.call === 1 ? { text: '', cutOff: true } : 'complete answer'));
      await newAgent(a, { id: 'cut-early', model: 'openai/cut-early' });
      const task = await ask(a, 'cut-early');
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
      assert.equal(replyText(task), 'complete answer');
      assert.equal(requestsFor('cut-early').length, 2);
    });

    it('anthropic: a stream without message_stop fails the task', async () => {
      script('claude-cut', () => ({ text: 'The answer is', cutOff: true }));
      await newAgent(a, { id: 'claude-cut', model: 'anthropic/claude-cut' });
      const task = await ask(a, 'claude-cut');
      assert.equal(task.status.state, 'TASK_STATE_FAILED');
      assert.match(
        task.metadata['x-arbiter.error'],
        /^provider_error: anthropic ended the stream without message_stop/,
      );
      assert.equal(requestsFor('claude-cut').length, 1);
    });
  });

  describe('429 is back-pressure, not a fault', () => {
    /**
     * A model that answers 429 with `headers`, and refuses (another 429) any
     * retry that comes before the wait it asked for: the task completes after
     * exactly two requests only if Arbiter honoured the wait.
     */
    const patient = (model: string, headers: () => { headers: Record<string, string>; waitMs: number }) => {
      let notBefore = 0;
      script(model, (call) => {
        if (call.call === 1 || Date.now() < notBefore) {
          const h = headers();
          // 100 ms of slack for timer and clock granularity; early retries come 250–750 ms after the 429.
          notBefore = Date.now() + h.waitMs - 100;
          return { text: '', status: 429, headers: h.headers };
        }
        return `${model} waited`;
      });
    };

    it('honours Retry-After in delta-seconds, as an HTTP-date, and retry-after-ms', async () => {
      patient('ra-seconds', () => ({ headers: { 'retry-after': '1' }, waitMs: 1000 }));
      patient('ra-date', () => {
        // An HTTP-date has whole seconds: the wait is what is left until then.
        const at = new Date(Math.ceil((Date.now() + 1500) / 1000) * 1000);
        return { headers: { 'retry-after': at.toUTCString() }, waitMs: at.getTime() - Date.now() };
      });
      patient('ra-ms', () => ({ headers: { 'retry-after-ms': '1500' }, waitMs: 1500 }));
      const models = ['ra-seconds', 'ra-date', 'ra-ms'];
      for (const m of models) await newAgent(a, { id: m, model: `openai/${m}` });
      const tasks = await Promise.all(models.map((m) => ask(a, m)));
      for (const [i, m] of models.entries()) {
        assert.equal(tasks[i].status.state, 'TASK_STATE_COMPLETED', `${m}: ${tasks[i].metadata?.['x-arbiter.error']}`);
        assert.equal(replyText(tasks[i]), `${m} waited`);
        assert.equal(requestsFor(m).length, 2, `${m}: one 429, then one retry after the wait`);
      }
    });

    it("one tenant's 429s never open a breaker: another model, and the same one, are still called", async () => {
      script('busy', () => ({ text: '', status: 429, headers: { 'retry-after': '0' } }));
      script('calm', () => 'calm reply');
      await newAgent(a, { id: 'busy', model: 'openai/busy' });
      await newAgent(c, { id: 'calm', model: 'openai/calm' });
      for (let i = 1; i <= 2; i++) {
        const task = await ask(a, 'busy');
        assert.equal(task.status.state, 'TASK_STATE_FAILED');
        assert.match(task.metadata['x-arbiter.error'], /^rate_limited: /);
      }
      assert.equal(requestsFor('busy').length, 6, 'three attempts per call');
      // Tenant C, another model on the same provider: called and answered.
      const calm = await ask(c, 'calm');
      assert.equal(calm.status.state, 'TASK_STATE_COMPLETED', calm.metadata?.['x-arbiter.error']);
      assert.equal(replyText(calm), 'calm reply');
      // And the busy model itself is still called, not failed fast.
      const again = await ask(a, 'busy');
      assert.match(again.metadata['x-arbiter.error'], /^rate_limited: /);
      assert.equal(requestsFor('busy').length, 9);
    });

    it('a Retry-After longer than Arbiter waits fails at once with rate_limited', async () => {
      script('very-busy', () => ({ text: '', status: 429, headers: { 'retry-after': '3600' } }));
      await newAgent(a, { id: 'very-busy', model: 'openai/very-busy' });
      const task = await ask(a, 'very-busy');
      assert.equal(task.status.state, 'TASK_STATE_FAILED');
      assert.match(task.metadata['x-arbiter.error'], /^rate_limited: openai is rate limiting .*3600 s/);
      assert.equal(requestsFor('very-busy').length, 1);
    });
  });

  it('faults open the breaker of that model only: another model on the same provider is still called', async () => {
    script('down', () => ({ text: '', status: 500, headers: {} }));
    script('up', () => 'up reply');
    await newAgent(a, { id: 'down', model: 'openai/down' });
    await newAgent(c, { id: 'up', model: 'openai/up' });
    const first = await ask(a, 'down');
    assert.match(first.metadata['x-arbiter.error'], /^provider_error: openai failed \(HTTP 500\)/);
    // The second call's second attempt is the fifth fault in a row: the breaker of openai/down opens.
    const second = await ask(a, 'down');
    assert.match(second.metadata['x-arbiter.error'], /^provider_unavailable: openai model 'down' is failing/);
    assert.equal(requestsFor('down').length, 5);
    const open = await ask(a, 'down');
    assert.match(open.metadata['x-arbiter.error'], /^provider_unavailable: openai model 'down' is failing/);
    assert.equal(requestsFor('down').length, 5, 'not called while its breaker is open');
    const up = await ask(c, 'up');
    assert.equal(up.status.state, 'TASK_STATE_COMPLETED', up.metadata?.['x-arbiter.error']);
    assert.equal(replyText(up), 'up reply');
  });

  it('o-series and gpt-5 models get max_completion_tokens and no temperature; others max_tokens', async () => {
    for (const m of ['o3-mini', 'o1', 'gpt-5-mini', 'gpt-4o-mini']) {
      script(m, () => `${m} ok`);
      await newAgent(a, { id: m, model: `openai/${m}`, max_tokens: 321, temperature: 0.2 });
      const task = await ask(a, m);
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED', task.metadata?.['x-arbiter.error']);
    }
    // A bare o-series name routes to OpenAI too.
    script('o4-mini', () => 'o4-mini ok');
    await newAgent(a, { id: 'o4', model: 'o4-mini', max_tokens: 321 });
    assert.equal((await ask(a, 'o4')).status.state, 'TASK_STATE_COMPLETED');
    for (const m of ['o3-mini', 'o1', 'gpt-5-mini', 'o4-mini']) {
      const body = requestsFor(m)[0].body;
      assert.equal(body.max_completion_tokens, 321, m);
      assert.equal('max_tokens' in body, false, m);
      assert.equal('temperature' in body, false, m);
    }
    const classic = requestsFor('gpt-4o-mini')[0].body;
    assert.equal(classic.max_tokens, 321);
    assert.equal(classic.temperature, 0.2);
    assert.equal('max_completion_tokens' in classic, false);
  });

  it('OPENROUTER_BASE_URL: openrouter/<model> goes there, with the OpenRouter key', async () => {
    script('vendor/some-model', () => 'routed through openrouter');
    await newAgent(a, { id: 'router', model: 'openrouter/vendor/some-model' });
    const task = await ask(a, 'router');
    assert.equal(task.status.state, 'TASK_STATE_COMPLETED', task.metadata?.['x-arbiter.error']);
    assert.equal(replyText(task), 'routed through openrouter');
    const req = requestsFor('vendor/some-model')[0];
    assert.equal(req.path, '/v1/chat/completions');
    assert.equal(req.headers.authorization, `Bearer ${OPENROUTER_KEY}`);
  });
});
