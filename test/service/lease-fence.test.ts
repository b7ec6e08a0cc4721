import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { A2aRequestHandler, type CallContext } from '../../src/a2a-inbound/handler/a2a-request-handler.js';
import { AgentCatalog } from '../../src/registry/services/agent-catalog.service.js';
import { LeaseFence } from '../../src/tasks/runs/lease-fence.js';
import { REAL_POSTGRES } from '../helpers/database.js';
import { startEngine, type TestEngine, tenantPrincipal } from '../helpers/engine.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { PATIENCE_MS } from '../helpers/patience.js';

/**
 * While a replica is out of touch with the database its runs wait before
 * acting outside the process: no model call, no tool, until the fence
 * opens — and then they go on, not ended.
 */
describe(`the lease fence (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let engine: TestEngine;
  let fake: FakeProvider;
  let ctx: CallContext;
  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    engine = await startEngine({ OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_API_KEY: 'sk-test-fence-000001' });
    const tenant = await engine.newTenant();
    await engine.app.get(AgentCatalog).create(tenant, { id: 'remote-model', role: 'r', model: 'openai/m' });
    const agent = await engine.app.get(AgentCatalog).resolve(tenant, 'remote-model');
    ctx = {
      principal: tenantPrincipal(tenant, 't', 'x'),
      agent: agent!,
      signal: new AbortController().signal,
    };
  });
  after(async () => {
    engine.app.get(LeaseFence).reopen();
    await engine.close();
    await fake.stop();
  });

  it('a run calls no model while the fence is closed, and answers once it opens', async () => {
    const fence = engine.app.get(LeaseFence);
    const handler = engine.app.get(A2aRequestHandler);
    fence.close();
    const task = await handler.sendMessage(ctx, {
      message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'say behind the fence' }] },
      returnImmediately: true,
    });
    const end = Date.now() + PATIENCE_MS;
    while (fence.waiting === 0) {
      assert.ok(Date.now() < end, 'the run reached the fence');
      await sleep(20);
    }
    assert.equal(fake.requests.length, 0, 'no model call while it is closed');
    fence.reopen();
    const done = await handler.getTask(ctx, { id: task.id });
    let now = done;
    while (now.state !== 'TASK_STATE_COMPLETED') {
      assert.ok(Date.now() < end && now.state === 'TASK_STATE_WORKING', `state ${now.state} ${now.errorMessage}`);
      await sleep(20);
      now = await handler.getTask(ctx, { id: task.id });
    }
    assert.equal(fake.requests.length, 1);
    assert.equal(now.artifacts[0]?.parts.map((p) => p.text).join(''), 'behind the fence');
  });
});
