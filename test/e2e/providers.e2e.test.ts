import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeProvider } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { a2a, readSse, waitFor } from '../helpers/a2a.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const OPENAI_KEY = 'sk-test-openai-KEY-0001';
const ANTHROPIC_KEY = 'sk-ant-test-KEY-0002';

describe('model providers (against a fake provider speaking each wire format)', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let t: TestTenant;
  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: OPENAI_KEY,
        ANTHROPIC_BASE_URL: fake.url,
        ANTHROPIC_API_KEY: ANTHROPIC_KEY,
        ARBITER_DEFAULT_MODEL: 'openai/fake-default',
        ARBITER_MAX_TASK_OUTPUT_BYTES: String(1024 * 1024),
        TEST_LOG_LEVEL: 'silent',
      },
    });
    t = await newTenant(server, 'providers');
    await newAgent(t, { id: 'gpt', model: 'openai/fake-gpt', role: 'assistant', rules: ['be exact'] });
    await newAgent(t, { id: 'claude', model: 'anthropic/claude-fake', role: 'assistant' });
    await newAgent(t, { id: 'nowhere', model: 'openrouter/some-model' });
    // Models of their own for the failures below: each model has its breaker, which these would open.
    await newAgent(t, { id: 'gpt-faults', model: 'openai/fake-faults' });
    await newAgent(t, { id: 'claude-faults', model: 'anthropic/claude-faults' });
  });
  after(async () => {
    await server.close();
    await fake.stop();
  });

  const on = (agent: string) => a2a(server.url, t.token, agent);

  for (const agent of ['gpt', 'claude']) {
    it(`${agent}: streams real model text through A2A, with token counts`, async () => {
      const { events } = await on(agent).stream('say hello from the model').ended;
      const chunks = events.filter((e) => e.data.result.artifactUpdate);
      assert.ok(chunks.length >= 3, `${chunks.length} chunks`);
      const last = events[events.length - 1].data.result.statusUpdate;
      assert.equal(last.status.state, 'TASK_STATE_COMPLETED');
      assert.equal(last.status.message, undefined, '§3.7: no copy of the answer on the status');
      const text = chunks.map((e) => e.data.result.artifactUpdate.artifact.parts[0]?.text ?? '').join('');
      assert.equal(text, 'hello from the model');
      const task = await on(agent).get(last.taskId);
      assert.ok(task.result.metadata['x-arbiter.input_tokens'] > 0);
      assert.equal(task.result.metadata['x-arbiter.output_tokens'], 4);
    });
  }

  it('sends the key and the constitution as the provider expects', async () => {
    const openai = fake.requests.find((r) => r.path === '/v1/chat/completions')!;
    assert.equal(openai.headers.authorization, `Bearer ${OPENAI_KEY}`);
    assert.equal(openai.body.model, 'fake-gpt');
    assert.equal(openai.body.stream, true);
    assert.equal(openai.body.messages[0].role, 'system');
    assert.match(openai.body.messages[0].content, /be exact/);
    const anthropic = fake.requests.find((r) => r.path === '/v1/messages')!;
    assert.equal(anthropic.headers['x-api-key'], ANTHROPIC_KEY);
    assert.equal(anthropic.headers['anthropic-version'], '2023-06-01');
    assert.equal(anthropic.body.model, 'claude-fake');
  });

  it('the master agent runs on the default model and sees the roster', async () => {
    const r = await on('index').send('say routed');
    assert.equal(r.result.task.status.state, 'TASK_STATE_COMPLETED');
    const req = fake.requests[fake.requests.length - 1];
    assert.equal(req.body.model, 'fake-default');
    const system = req.body.messages[0].content as string;
    assert.match(system, /AGENTS — delegate with \/agent <id> <task>:/);
    assert.match(system, /^ {2}claude \[assistant\] anthropic\/claude-fake/m);
    assert.match(system, /^ {2}gpt \[assistant\] openai\/fake-gpt/m);
  });

  it('429 then success: retried, the task completes', async () => {
    const r = await on('gpt').send('flaky retried fine');
    assert.equal(r.result.task.status.state, 'TASK_STATE_COMPLETED');
    assert.equal(r.result.task.artifacts[0].parts[0].text, 'retried fine');
  });

  it('failures become stable codes; no key or provider text leaks', async () => {
    const cases: [string, RegExp][] = [
      ['deny', /^auth_failed: /],
      ['garbage', /^provider_error: /],
      ['crash', /^provider_error: /],
    ];
    for (const [text, code] of cases) {
      const r = await on('gpt').send(text);
      const task = r.result.task;
      assert.equal(task.status.state, 'TASK_STATE_FAILED', text);
      assert.match(task.metadata['x-arbiter.error'], code, text);
      const all = JSON.stringify(r);
      for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, 'sk-live-SECRET-123'])
        assert.ok(!all.includes(secret), `${text} leaks`);
    }
    // Anthropic's stream error names only a type it documents; a redirect is not followed (it would carry the key).
    const anthropicCases: [string, string, RegExp][] = [
      ['claude-faults', 'quote', /^provider_error: anthropic reported an error mid-stream$/],
      [
        'claude-faults',
        'redirect',
        /^provider_error: anthropic answered with a redirect \(HTTP 307\), which is not followed/,
      ],
      [
        'gpt-faults',
        'redirect',
        /^provider_error: openai answered with a redirect \(HTTP 307\), which is not followed/,
      ],
    ];
    for (const [agent, text, code] of anthropicCases) {
      const r = await on(agent).send(text);
      assert.equal(r.result.task.status.state, 'TASK_STATE_FAILED', text);
      assert.match(r.result.task.metadata['x-arbiter.error'], code, text);
      assert.ok(!JSON.stringify(r).includes(ANTHROPIC_KEY), `${text} leaks`);
    }
    assert.deepEqual(
      fake.requests.filter((q) => q.path.startsWith('/elsewhere')),
      [],
    );
    // A failure after text was streamed is not retried: the partial text stays, the task fails.
    const crash = await on('gpt').send('crash');
    assert.equal(crash.result.task.artifacts[0].parts[0].text, 'partial ');
    // The event log ends with the terminal status.
    const ev = await fetch(`${server.url}/v1/requests/${crash.result.task.id}/events`, {
      headers: { authorization: `Bearer ${t.token}` },
    });
    const { events } = await readSse(ev);
    assert.deepEqual(
      events.slice(-3).map((e) => e.event),
      ['error', 'stream_end', 'done'],
    );
    const done = events[events.length - 1].data;
    assert.equal(done.ok, false);
    assert.equal(done.error_code, 'provider_error');
  });

  it('a model that answers more than ARBITER_MAX_TASK_OUTPUT_BYTES is cut off there: the task fails, stored', async () => {
    const within = await on('gpt').send('flood 8'); // 512 KiB
    assert.equal(within.result.task.status.state, 'TASK_STATE_COMPLETED');
    const over = await on('gpt').send('flood 24'); // 1.5 MiB, past the 1 MiB this server allows
    const task = over.result.task;
    assert.equal(task.status.state, 'TASK_STATE_FAILED');
    assert.match(task.metadata['x-arbiter.error'], /^output_too_large: the task's output passed 1048576 bytes/);
    // What came before the limit is kept, and the task reads back as it ended.
    const text: string = task.artifacts[0].parts[0].text;
    assert.ok(text.length > 512 * 1024 && text.length <= 1024 * 1024, `${text.length}`);
    assert.equal((await on('gpt').get(task.id)).result.status.state, 'TASK_STATE_FAILED');
  });

  it('an unconfigured provider or unknown model fails clearly, naming what is configured', async () => {
    const r = await on('nowhere').send('hi');
    assert.equal(r.result.task.status.state, 'TASK_STATE_FAILED');
    assert.match(
      r.result.task.metadata['x-arbiter.error'],
      /^model_unavailable: .*openrouter.*configured: echo, anthropic, openai, ollama/,
    );
  });

  it('cancel during a model call aborts the HTTP request at once', async () => {
    const before = fake.closedEarly;
    const r = await on('gpt').send('slow', { returnImmediately: true });
    const id = r.result.task.id as string;
    await waitFor(async () => ((await on('gpt').get(id)).result.artifacts ? true : undefined));
    const canceled = await on('gpt').cancel(id);
    assert.equal(canceled.result.status.state, 'TASK_STATE_CANCELED');
    await waitFor(async () => (fake.closedEarly > before ? true : undefined));
  });

  it('GET /v1/models lists what is configured', async () => {
    const res = await t.client.get('/v1/models');
    assert.equal(res.status, 200);
    assert.equal(res.body.default_model, 'openai/fake-default');
    assert.deepEqual(
      res.body.providers.map((p: { name: string }) => p.name),
      ['echo', 'anthropic', 'openai', 'ollama'],
    );
    assert.ok(!res.text.includes(OPENAI_KEY));
  });
});
