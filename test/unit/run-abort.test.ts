import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunAbort } from '../../src/common/run-abort.js';

/** Counts the readings of `signal` (what makes Node's controller build its AbortSignal). */
class Counted extends RunAbort {
  reads = 0;
  override get signal(): AbortSignal {
    this.reads++;
    return super.signal;
  }
}

describe("a run's abort (RunAbort)", () => {
  it('answers whether it aborted without reading its signal', () => {
    const abort = new Counted();
    assert.equal(abort.aborted, false);
    assert.equal(abort.reason, undefined);
    abort.throwIfAborted();
    assert.equal(abort.reads, 0, 'asking made no signal');
  });

  it('aborts once: the first reason stays, in the flag and in a signal read before or after', () => {
    const early = new RunAbort();
    const heard: unknown[] = [];
    early.signal.addEventListener('abort', () => {
      heard.push(early.signal.reason);
      // A listener that asks the controller hears the same.
      heard.push(early.aborted && early.reason);
      assert.throws(
        () => early.throwIfAborted(),
        (err) => err === why,
      );
    });
    const why = new Error('first');
    early.abort(why);
    early.abort(new Error('second'));
    assert.equal(early.aborted, true);
    assert.equal(early.reason, why);
    assert.deepEqual(heard, [why, why], 'a listener hears it once, with the first reason');
    assert.throws(
      () => early.throwIfAborted(),
      (err) => err === why,
    );

    const late = new RunAbort();
    late.abort(why);
    assert.equal(late.signal.aborted, true, 'the signal read after the abort is aborted');
    assert.equal(late.signal.reason, why);
  });

  it('without a reason, the reason is the AbortError a controller gives', () => {
    const abort = new RunAbort();
    abort.abort();
    assert.ok(abort.reason instanceof DOMException);
    assert.equal(abort.reason.name, 'AbortError');
    assert.equal(abort.signal.reason, abort.reason);
  });
});
