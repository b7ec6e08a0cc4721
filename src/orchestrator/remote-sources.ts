import { setTimeout as sleep } from 'node:timers/promises';
import { GetTaskRequest, SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { isTaskNotFound, stateOf, UpstreamProblem } from './remote-content.js';

type Json = Record<string, unknown>;

/** The states that end a turn of a remote-backed agent (its task settles, or waits for input). */
export const SETTLED = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
]);
/** Every state an upstream may report. */
export const KNOWN_STATES = new Set([...SETTLED, 'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']);

/** A non-streaming upstream: send (returning at once), then follow its task by GetTask. */
export async function* sendAndPoll(
  client: Client,
  request: SendMessageRequest,
  signal: AbortSignal,
): AsyncGenerator<StreamResponse> {
  const result = await client.sendMessage(request, { signal });
  if ('status' in result) {
    const task = result;
    yield { payload: { $case: 'task', value: task } };
    yield* pollTask(client, task.id, signal);
  } else yield { payload: { $case: 'message', value: result } };
}

/**
 * GetTask with backoff (100 ms doubling to 2 s); each answer that differs from the one before as a task event
 * (so `idle_ms` counts the time the task did not change); ends when the task settles.
 */
export async function* pollTask(client: Client, id: string, signal: AbortSignal): AsyncGenerator<StreamResponse> {
  let last = '';
  for (let wait = 100; ; wait = Math.min(wait * 2, 2_000)) {
    await sleep(wait, undefined, { signal });
    const task = await client.getTask({ id, historyLength: 0, tenant: '' }, { signal });
    const json = Task.toJSON(task) as Json;
    const seen = JSON.stringify(json);
    if (seen === last) continue;
    last = seen;
    yield { payload: { $case: 'task', value: task } };
    if (SETTLED.has(stateOf(json))) return;
  }
}

/**
 * An upstream task followed again after a takeover: as it stands now (GetTask with its whole history), then —
 * when the upstream streams — a resubscription (SubscribeToTask: the task again, then its live events). What
 * either repeats of the log is dropped by the follower. An upstream that refuses the resubscription (the task
 * settled meanwhile, say) is followed by GetTask instead; one that no longer knows the task ends the turn.
 */
export async function* resubscribed(
  client: Client,
  id: string,
  streaming: boolean,
  signal: AbortSignal,
): AsyncGenerator<StreamResponse> {
  const task = await client.getTask(GetTaskRequest.fromJSON({ id }), { signal });
  yield { payload: { $case: 'task', value: task } };
  if (!streaming || SETTLED.has(stateOf(Task.toJSON(task) as Json))) return;
  try {
    yield* client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id }), { signal });
  } catch (err) {
    if (isTaskNotFound(err) || signal.aborted) throw err;
    // Not resubscribable now: `follow` goes on by GetTask.
  }
}

/** One upstream event as JSON, within the size limit. */
export function checkedEvent(value: unknown, maxBytes: number): Json {
  let json: Json;
  try {
    json = StreamResponse.toJSON(value as StreamResponse) as Json;
  } catch {
    throw new UpstreamProblem('upstream_protocol', 'the upstream sent an event that is not an A2A stream response');
  }
  const size = Buffer.byteLength(JSON.stringify(json));
  if (size > maxBytes) {
    throw new UpstreamProblem(
      'upstream_too_large',
      `the upstream sent an event of ${size} bytes, over the limit of ${maxBytes}`,
    );
  }
  return json;
}

/** What `watched` needs of its turn. */
export interface Watch {
  /** The wait for the first event, then for each next one (the agent's `first_event_ms`, `idle_ms`). */
  firstMs: number;
  idleMs: number;
  maxEventBytes: number;
  /** A wait ran out: the turn ends with this problem (it aborts the call). */
  expire: (problem: UpstreamProblem) => void;
  /** Runs a step of the source for the turn's caller (see `onBehalfOf`). */
  acting: <T>(fn: () => Promise<T>) => Promise<T>;
  /** The source gave an event. */
  answered: () => void;
  /** Whether the turn settled: a stream left then is read to its end in the background (see `drain`). */
  settled: () => boolean;
  /** The source is a stream (SSE): left after the turn settled, it is drained rather than closed. */
  stream: boolean;
  /** Ends the call: a source left before the turn settled, or a drain that ran out of time. */
  abort: () => void;
}

/** How long a settled turn's stream may take to end by itself (its connection is then reused), before it is cut. */
const DRAIN_MS = 1_000;

/** A source's events within the agent's timeouts: the first within `firstMs`, each next within `idleMs`. */
export async function* watched(source: AsyncIterable<unknown>, w: Watch): AsyncGenerator<Json> {
  const it = source[Symbol.asyncIterator]();
  let first = true;
  let ended = false;
  try {
    for (;;) {
      const ms = first ? w.firstMs : w.idleMs;
      const what = first ? 'sent no first event' : 'was silent';
      const timer = setTimeout(
        () => w.expire(new UpstreamProblem('upstream_timeout', `the upstream ${what} for ${ms} ms`)),
        ms,
      );
      let r: IteratorResult<unknown>;
      try {
        r = await w.acting(() => it.next());
      } catch (err) {
        ended = true;
        throw err;
      } finally {
        clearTimeout(timer);
      }
      if (r.done) {
        ended = true;
        return;
      }
      first = false;
      w.answered();
      yield checkedEvent(r.value, w.maxEventBytes);
    }
  } finally {
    if (!ended && w.settled()) {
      if (w.stream) drain(it, w.abort);
      else void it.return?.()?.catch(() => undefined);
    }
  }
}

/**
 * The rest of a settled turn's stream (an upstream ends it right after the task settles), read in the background:
 * a stream read to its end gives its connection back for the next call, where a cut one closes it. A stream that
 * does not end within `DRAIN_MS` is cut.
 */
function drain(it: AsyncIterator<unknown>, abort: () => void): void {
  const timer = setTimeout(abort, DRAIN_MS).unref();
  void (async () => {
    try {
      while (!(await it.next()).done);
    } catch {
      // cut, or failed: either way it is over
    } finally {
      clearTimeout(timer);
    }
  })();
}
