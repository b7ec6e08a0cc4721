import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffMs, pushHeaders, pushPayload } from '../../src/push/services/push-payload.js';
import type { StoredTaskEvent } from '../../src/tasks/task-events.js';

const task = { id: 't1', contextId: 'c1' };
const at = '2026-01-01T00:00:00.000Z';
const status = (state: string, seq: number): StoredTaskEvent =>
  ({ taskId: 't1', seq, createdAt: at, kind: 'status', payload: { state, timestamp: at } }) as StoredTaskEvent;

describe('push payloads (§4.3.3)', () => {
  it('v1.0: a StreamResponse statusUpdate; v0.3: a status-update, final when the turn ends', () => {
    assert.deepEqual(pushPayload('1.0', status('TASK_STATE_WORKING', 2), task), {
      statusUpdate: { taskId: 't1', contextId: 'c1', status: { state: 'TASK_STATE_WORKING', timestamp: at } },
    });
    const v03 = pushPayload('0.3', status('TASK_STATE_COMPLETED', 3), task) as Record<string, unknown>;
    assert.equal(v03.kind, 'status-update');
    assert.equal(v03.final, true);
    assert.equal((pushPayload('0.3', status('TASK_STATE_WORKING', 2), task) as { final: boolean }).final, false);
  });

  it('user messages and token counts are not pushed', () => {
    const usage = { taskId: 't1', seq: 4, createdAt: at, kind: 'usage', payload: { inputTokens: 1, outputTokens: 2 } };
    assert.equal(pushPayload('1.0', usage as StoredTaskEvent, task), undefined);
  });

  it('headers: Authorization from scheme and credentials, the token header, a delivery id per (config, seq)', () => {
    const h = pushHeaders({ id: 'cfg', dialect: '1.0', token: 'tok', authScheme: 'Bearer', credentials: 'xyz' }, 7);
    assert.deepEqual(h, {
      'content-type': 'application/a2a+json',
      'x-arbiter-delivery-id': 'cfg:7',
      authorization: 'Bearer xyz',
      'x-a2a-notification-token': 'tok',
    });
    const bare = pushHeaders({ id: 'cfg', dialect: '0.3', token: null, authScheme: null, credentials: null }, 1);
    assert.deepEqual(bare, { 'content-type': 'application/json', 'x-arbiter-delivery-id': 'cfg:1' });
  });

  it('backoff doubles from the base up to the cap, with half of it jittered', () => {
    assert.equal(
      backoffMs(1, 1000, 60_000, () => 0),
      500,
    );
    assert.equal(
      backoffMs(1, 1000, 60_000, () => 1),
      1000,
    );
    assert.equal(
      backoffMs(3, 1000, 60_000, () => 1),
      4000,
    );
    assert.equal(
      backoffMs(30, 1000, 60_000, () => 1),
      60_000,
    );
    assert.equal(
      backoffMs(10_000, 1000, 60_000, () => 0),
      30_000,
    );
  });
});
