import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createStatement } from '../../src/tasks/statements/create.sql.js';

/** The parts of a creation record `createStatement` looks at (absent: none); the rest does not decide the shape. */
const record = (over: Record<string, unknown>) => ({
  i: 0,
  state: 'TASK_STATE_WORKING',
  ...over,
});
/** Which of the statement's optional parts a batch's statement has. */
const parts = (records: Record<string, unknown>[]) => {
  const { text } = createStatement(records.map(record));
  return {
    cap: /FROM tenant_running r\b[\s\S]*FOR UPDATE/.test(text),
    files: text.includes('INSERT INTO task_files'),
    usage: text.includes('INSERT INTO usage_ledger'),
    requests: text.includes('INSERT INTO usage_requests'),
  };
};
const none = { cap: false, files: false, usage: false, requests: false };
const extras = { files: true, usage: true, requests: true };

describe('the creation statement of a batch has the parts the batch needs', () => {
  it('a task that starts a run under a cap is checked against it; one created settled, or without a cap, is not', () => {
    assert.deepEqual(parts([{ cap: 5 }]), { ...none, cap: true });
    assert.deepEqual(parts([{ cap: 5, state: 'TASK_STATE_SUBMITTED' }]), { ...none, cap: true });
    assert.deepEqual(parts([{ cap: 5, state: 'TASK_STATE_COMPLETED' }]), none);
    assert.deepEqual(parts([{ cap: 5, state: 'TASK_STATE_INPUT_REQUIRED' }]), none);
    assert.deepEqual(parts([{ cap: 0 }]), none);
  });

  it('files, model calls and a counted request bring the parts that store and account them', () => {
    assert.deepEqual(parts([{ files: [] }]), { ...none, ...extras });
    assert.deepEqual(parts([{ calls: [] }]), { ...none, ...extras });
    assert.deepEqual(parts([{ count_request: true }]), { ...none, ...extras });
  });

  it('a batch takes every part one of its tasks needs, each shape its own prepared statement', () => {
    assert.deepEqual(parts([{ state: 'TASK_STATE_COMPLETED', cap: 5 }, { cap: 5 }, { files: [] }]), {
      cap: true,
      ...extras,
    });
    const names = new Set(
      [{}, { cap: 5 }, { files: [] }, { cap: 5, calls: [] }].map((r) => createStatement([record(r)]).name),
    );
    assert.equal(names.size, 4);
  });
});
