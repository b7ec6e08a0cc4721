import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allowedFrom, isSettled, isTerminal, TASK_STATES, TERMINAL_STATES } from '../../src/tasks/task-state.js';

describe('task state machine (spec §4.1.3)', () => {
  it('a terminal state has no way out', () => {
    for (const to of TASK_STATES) {
      for (const from of TERMINAL_STATES) assert.ok(!allowedFrom(to).includes(from), `${from} → ${to}`);
    }
  });

  it('states only move forward: nothing returns to submitted; completed only from working', () => {
    assert.deepEqual(allowedFrom('TASK_STATE_SUBMITTED'), []);
    assert.deepEqual(allowedFrom('TASK_STATE_COMPLETED'), ['TASK_STATE_WORKING']);
    assert.ok(allowedFrom('TASK_STATE_WORKING').includes('TASK_STATE_INPUT_REQUIRED'), 'a continuation resumes');
  });

  it('every unfinished state can fail, be canceled or rejected', () => {
    for (const to of ['TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'] as const) {
      assert.deepEqual([...allowedFrom(to)].sort(), TASK_STATES.filter((s) => !isTerminal(s)).sort());
    }
  });

  it('settled means terminal or interrupted (where a blocking send returns)', () => {
    assert.deepEqual(
      TASK_STATES.filter(isSettled),
      TASK_STATES.filter((s) => isTerminal(s) || s === 'TASK_STATE_INPUT_REQUIRED' || s === 'TASK_STATE_AUTH_REQUIRED'),
    );
    assert.ok(!isSettled('TASK_STATE_WORKING'));
  });
});
