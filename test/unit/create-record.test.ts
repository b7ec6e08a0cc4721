import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MessageJson } from '../../src/common/a2a-json.js';
import type { Folded } from '../../src/tasks/repositories/merged-creation.js';
import { createRecord } from '../../src/tasks/statements/create.sql.js';
import type { TaskEventBody } from '../../src/tasks/task-events.js';

const message = (id: string, role: MessageJson['role']): MessageJson => ({
  messageId: id,
  role,
  parts: [{ text: id }],
});

describe('a creation as the statement takes it', () => {
  it('sends a message an event holds as that event’s index, any other whole', () => {
    const asked = message('asked', 'ROLE_USER');
    const reply = message('reply', 'ROLE_AGENT');
    const elsewhere = message('elsewhere', 'ROLE_AGENT');
    const events: TaskEventBody[] = [
      { kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: 't' } },
      { kind: 'message', payload: { message: asked } },
      { kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: 't' } },
      { kind: 'status', payload: { state: 'TASK_STATE_COMPLETED', message: reply, timestamp: 't' } },
    ];
    const folded = (history: MessageJson[], statusMessage: MessageJson | null): Folded => ({
      state: 'TASK_STATE_COMPLETED',
      events,
      history,
      statusMessage,
      errorMessage: null,
      artifacts: null,
      tokens: null,
      lease: null,
      files: [],
      parts: [],
    });
    const task = {
      taskId: 't1',
      messageId: 'asked',
      messageHash: 'h',
      tenantId: '00000000-0000-0000-0000-000000000001',
      agentId: 'a',
      contextId: 'c',
      metadata: {},
    };
    const lease = { owner: 'me', ms: 1000 };
    const r = createRecord(0, task, events.slice(0, 3), lease, folded([asked, reply, elsewhere], reply));
    assert.deepEqual(r.history, [1, 3, elsewhere]);
    assert.equal(r.status_message, 3);
    // An equal message that is another object is sent whole: only the very message an event holds is referred to.
    const copy = { ...reply };
    const s = createRecord(0, task, events.slice(0, 3), lease, folded([copy], copy));
    assert.deepEqual(s.history, [copy]);
    assert.deepEqual(s.status_message, copy);
    assert.equal(createRecord(0, task, events, lease, folded([], null)).status_message, null);
  });
});
