import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TaskState, type Task } from '@a2a-js/sdk';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { GRPC_ON, startTestServer, type TestServer } from '../helpers/server.js';
import { grpcClient, textMessage } from '../helpers/a2a.js';

describe('§10 gRPC binding', () => {
  let server: TestServer;
  let a: TestTenant;
  before(async () => {
    server = await startTestServer({ env: { ...GRPC_ON, ARBITER_ECHO_DELAY_MS: '5' } });
    a = await newTenant(server, 'grpc-a');
    await newAgent(a, { id: 'twin', role: 'twin' });
  });
  after(async () => {
    await server.close();
  });

  it('smoke', async () => {
    const c = await grpcClient(server.url, a.token, 'twin');
    assert.equal(c.transport.protocolName, 'GRPC');
    const t = (await c.sendMessage(textMessage('hello grpc'))) as Task;
    assert.equal(TaskState[t.status!.state], 'TASK_STATE_COMPLETED');
  });
});
