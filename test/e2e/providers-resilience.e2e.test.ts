import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeProvider, type ScriptCall, type ScriptReply } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { rpc } from '../helpers/a2a.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const V1 = { 'a2a-version': '1.0' };
const OPENROUTER_KEY = 'sk-or-test-KEY-0003';

function send(text: string) {
  return {
    jsonrpc: '2.0',
    id: 1,
    method: 'SendMessage',
    params: { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] } },
  };
}

/**
 * Providers that misbehave — streams cut off, 429s with each form of
 * Retry-After, one model failing while another is fine — driven through the
 * real app against a fake provider on loopback.
 */
describe('model providers under faults (cut-off streams, back-pressure, breakers)', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let a: TestTenant;

  /** Scripts a model on the fake (requests for it are answered by `fn`). */
  const script = (model: string, fn: (call: ScriptCall) => ScriptReply): void => {
    fake.scripts.set(model, fn);
  };
  const requestsFor = (model: string) => fake.requests.filter((r) => r.body.model === model);
  const ask = async (t: TestTenant, agent: string, text = 'hi') => {
    const res = await rpc(server.url, t.token, agent, send(text), V1);
    const body = (await res.json()) as any;
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
