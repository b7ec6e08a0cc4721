import { Inject, Injectable, Logger } from '@nestjs/common';
import { safeError } from '../../common/safe-error.js';
import { isDatabaseUnavailable } from '../../common/db-errors.js';
import { AsyncQueue } from '../../common/async-queue.js';
import { ORCHESTRATOR, type Orchestrator, type RunContext, type RunInput } from '../../orchestrator/run-event.js';
import { TaskRepository } from '../repositories/task.repository.js';
import { foldArtifacts, type ArtifactJson, type MessageJson, type TaskEventBody } from '../task-events.js';
import { TaskEventBus } from './event-bus.service.js';
import { InFlightRegistry, type InFlightRun } from './in-flight.registry.js';
import { RunWriter } from './run-writer.js';
import { LeaseService } from './lease.service.js';

/** Why a run was aborted; becomes the task's error text. */
export class CancelReason extends Error {
  constructor(message = 'canceled by client') {
    super(message);
    this.name = 'CancelReason';
  }
}

export interface RunStart {
  ctx: RunContext;
  /** The task was created already `working` (a new task); else the run writes that transition. */
  alreadyWorking?: boolean;
  first: RunInput;
  /** Artifacts of earlier turns of this task. */
  artifacts: ArtifactJson[];
  tokens: { input: number; output: number };
}

const now = (): string => new Date().toISOString();

/** Model text as PostgreSQL can store it: no NUL, no unpaired surrogate. */
function storable(text: string): string {
  return text.replaceAll('\u0000', '\uFFFD').toWellFormed();
}

function agentMessage(ctx: RunContext, messageId: string, text: string): MessageJson {
  return { messageId, role: 'ROLE_AGENT', parts: [{ text }], contextId: ctx.contextId, taskId: ctx.taskId };
}

/** A whole artifact in one event (a tool call, a file, a sub-agent's reply). */
function oneShot(
  artifactId: string,
  name: string,
  parts: ArtifactJson['parts'],
  metadata: Record<string, unknown>,
): TaskEventBody {
  return {
    kind: 'artifact',
    payload: { artifact: { artifactId, name, parts, metadata }, append: false, lastChunk: true },
  };
}

/**
 * Runs the orchestrator for a task and writes what it emits to the event
 * log: `working`, text chunks as appends to the turn's `response` artifact,
 * usage, and exactly one final state — completed, input-required, failed or
 * canceled. Every run ends with such an event, including runs that fail
 * before the model starts.
 */
@Injectable()
export class TaskRunner {
  private readonly logger = new Logger('TaskRunner');

  constructor(
    private readonly repo: TaskRepository,
    private readonly bus: TaskEventBus,
    private readonly inflight: InFlightRegistry,
    @Inject(ORCHESTRATOR) private readonly orchestrator: Orchestrator,
    private readonly leases: LeaseService,
  ) {}

  /** Starts the run in the background and registers it; returns at once. */
  start(start: RunStart): InFlightRun {
    const inbox = new AsyncQueue<RunInput>();
    inbox.push(start.first);
    const abort = new AbortController();
    let done!: () => void;
    const run: InFlightRun = { abort, inbox, finished: new Promise<void>((r) => (done = r)), accepting: true };
    this.inflight.set(start.ctx.taskId, run);
    this.execute(start, run)
      .catch((err: unknown) => this.logger.error({ err: safeError(err), taskId: start.ctx.taskId }, 'run crashed'))
      .finally(() => {
        inbox.close();
        this.inflight.delete(start.ctx.taskId, run);
        done();
      });
    return run;
  }

  private async execute(start: RunStart, run: InFlightRun): Promise<void> {
    const { ctx } = start;
    const writer = new RunWriter(ctx.taskId, this.repo, this.bus);
    let artifacts = start.artifacts;
    const tokens = { ...start.tokens };
    const base = { ...start.tokens };
    let turn = artifacts.filter((a) => a.artifactId.startsWith(`${ctx.taskId}-text-`)).length;
    const signal = run.abort.signal;

    const emit = (event: TaskEventBody): void => {
      artifacts = foldArtifacts(artifacts, [event]);
      writer.enqueue(event);
    };
    const finish = async (events: TaskEventBody[], change: Parameters<RunWriter['write']>[1]): Promise<void> => {
      for (const e of events) artifacts = foldArtifacts(artifacts, [e]);
      await writer.write(events, { ...change, artifacts, tokens: { ...tokens } });
    };
    /** Ends the run with a final state, under the task's lock so no continuation slips in unanswered. */
    const end = (events: TaskEventBody[], change: Parameters<RunWriter['write']>[1]): Promise<void> =>
      this.inflight.withLock(ctx.taskId, async () => {
        run.accepting = false;
        await finish(events, { ...change, lease: null });
      });

    try {
      if (!start.alreadyWorking) {
        const started = await writer.write(
          [{ kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: now() } }],
          { state: 'TASK_STATE_WORKING', statusMessage: null, lease: this.leases.lease() },
        );
        if (!started) return; // canceled before it began
      }
      for (;;) {
        const artifactId = `${ctx.taskId}-text-${turn}`;
        let chunks = 0;
        let extras = 0;
        let outcome: 'done' | 'input' | 'error' | 'none' = 'none';
        for await (const ev of this.orchestrator.run(ctx, run.inbox, signal)) {
          if (writer.rejected) return;
          switch (ev.type) {
            case 'text': {
              if (ev.delta.length === 0) break;
              const delta = storable(ev.delta);
              if ((ev.depth ?? 0) > 0) {
                // A sub-agent's text: in the log (native streams show it live), not in the response artifact.
                emit({ kind: 'text', payload: { depth: ev.depth ?? 1, agent: ev.agent ?? '', delta } });
                break;
              }
              emit({
                kind: 'artifact',
                payload: {
                  artifact: { artifactId, name: 'response', parts: [{ text: delta }] },
                  append: chunks > 0,
                  lastChunk: false,
                },
              });
              chunks++;
              break;
            }
            case 'tool_call':
              emit(
                oneShot(
                  `${ctx.taskId}-tool-${turn}-${++extras}`,
                  'tool_call',
                  [{ data: { tool: ev.tool, ok: ev.ok, args: storable(ev.args), ...ev.detail } }],
                  { 'x-arbiter.tool_call': true, 'x-arbiter.depth': ev.depth, 'x-arbiter.agent': ev.agent },
                ),
              );
              break;
            case 'file':
              emit(
                oneShot(
                  `${ctx.taskId}-file-${turn}-${++extras}`,
                  ev.path,
                  [
                    {
                      raw: Buffer.from(ev.content, 'utf8').toString('base64'),
                      filename: ev.path,
                      mediaType: ev.mediaType,
                    },
                  ],
                  { 'x-arbiter.file': true, 'x-arbiter.depth': ev.depth, 'x-arbiter.agent': ev.agent },
                ),
              );
              break;
            case 'sub_agent_response':
              emit(
                oneShot(
                  `${ctx.taskId}-sub-${turn}-${++extras}`,
                  'sub_agent_response',
                  [{ data: { agent: ev.agent, depth: ev.depth, content: storable(ev.content) } }],
                  { 'x-arbiter.sub_agent': true },
                ),
              );
              break;
            case 'usage':
              tokens.input = base.input + ev.inputTokens;
              tokens.output = base.output + ev.outputTokens;
              emit({ kind: 'usage', payload: { inputTokens: tokens.input, outputTokens: tokens.output } });
              break;
            case 'done': {
              outcome = 'done';
              const reply = agentMessage(ctx, `${ctx.taskId}-r${turn}`, storable(ev.content));
              const closing: TaskEventBody[] = chunks
                ? [
                    {
                      kind: 'artifact',
                      payload: {
                        artifact: { artifactId, name: 'response', parts: [{ text: '' }] },
                        append: true,
                        lastChunk: true,
                      },
                    },
                  ]
                : [];
              const more = await this.inflight.withLock(ctx.taskId, async () => {
                if (run.inbox.size > 0) {
                  // More input arrived during the turn: record this reply and take the next turn.
                  await finish(closing, { historyAppend: [reply] });
                  return true;
                }
                run.accepting = false;
                await finish(
                  [
                    ...closing,
                    { kind: 'status', payload: { state: 'TASK_STATE_COMPLETED', message: reply, timestamp: now() } },
                  ],
                  { state: 'TASK_STATE_COMPLETED', statusMessage: reply, historyAppend: [reply], lease: null },
                );
                return false;
              });
              if (more) break;
              return;
            }
            case 'input_required': {
              outcome = 'input';
              const ask = agentMessage(ctx, `${ctx.taskId}-q${turn}`, storable(ev.prompt));
              await end(
                [{ kind: 'status', payload: { state: 'TASK_STATE_INPUT_REQUIRED', message: ask, timestamp: now() } }],
                { state: 'TASK_STATE_INPUT_REQUIRED', statusMessage: ask, historyAppend: [ask] },
              );
              return;
            }
            case 'error':
              outcome = 'error';
              await this.fail(ctx, `${ev.code}: ${ev.message}`, end);
              return;
            default: {
              const unreachable: never = ev;
              throw new Error(`unknown run event ${JSON.stringify(unreachable)}`);
            }
          }
          if (outcome === 'done') break;
        }
        if (outcome === 'done' && run.inbox.size > 0) {
          turn++;
          continue;
        }
        if (outcome === 'none') {
          signal.throwIfAborted();
          await this.fail(ctx, 'agent_error: the run ended without an answer', end);
        }
        return;
      }
    } catch (err) {
      if (signal.aborted) {
        const reason = signal.reason instanceof Error ? signal.reason.message : 'canceled';
        await end([{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', error: reason, timestamp: now() } }], {
          state: 'TASK_STATE_CANCELED',
          errorMessage: reason,
        }).catch(async (e: unknown) => {
          this.logger.warn({ err: safeError(e), taskId: ctx.taskId }, 'could not record cancellation; retrying');
          await this.lastResort(ctx.taskId, reason, 'TASK_STATE_CANCELED');
        });
        return;
      }
      const outage = isDatabaseUnavailable(err);
      const error = outage
        ? 'database_unavailable: the run could not be stored while the database was unreachable'
        : 'internal_error: the run failed unexpectedly';
      if (outage) this.logger.warn({ taskId: ctx.taskId }, 'run lost its database');
      else this.logger.error({ err: safeError(err), taskId: ctx.taskId }, 'run failed');
      await this.fail(ctx, error, end).catch(async (e: unknown) => {
        this.logger.warn(
          { err: safeError(e), taskId: ctx.taskId },
          'could not record failure; writing a bare failed status',
        );
        await this.lastResort(ctx.taskId, error);
      });
    }
  }

  /**
   * A failed status with nothing else, for when even the normal final write
   * fails. If the database cannot take it now (an outage), it is retried
   * until it can: no run leaves its task non-terminal.
   */
  private async lastResort(
    taskId: string,
    error: string,
    state: 'TASK_STATE_FAILED' | 'TASK_STATE_CANCELED' = 'TASK_STATE_FAILED',
    schedule = true,
  ): Promise<void> {
    try {
      const stored = await this.repo.append(taskId, [{ kind: 'status', payload: { state, error, timestamp: now() } }], {
        state,
        errorMessage: error,
        lease: null,
      });
      if (stored) this.bus.publish(taskId, stored);
      this.unrecorded.delete(taskId);
    } catch (err) {
      this.logger.error({ err: safeError(err), taskId }, 'could not record the end of a run; retrying');
      this.unrecorded.set(taskId, { error, state });
      if (schedule) this.retryUnrecorded();
    }
  }

  /** Runs whose end could not be written yet (the database was away), by task id. */
  private readonly unrecorded = new Map<
    string,
    { error: string; state: 'TASK_STATE_FAILED' | 'TASK_STATE_CANCELED' }
  >();
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = 250;

  /** One retry loop at a time; it re-arms itself (with backoff) only after a pass has finished. */
  private retryUnrecorded(): void {
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      void (async () => {
        for (const [taskId, { error, state }] of [...this.unrecorded]) {
          await this.lastResort(taskId, error, state, false);
        }
        this.retryTimer = undefined;
        if (this.unrecorded.size > 0) {
          this.retryMs = Math.min(this.retryMs * 2, 5_000);
          this.retryUnrecorded();
        } else {
          this.retryMs = 250;
        }
      })();
    }, this.retryMs);
    this.retryTimer.unref();
  }

  private async fail(
    ctx: RunContext,
    error: string,
    end: (events: TaskEventBody[], change: Parameters<RunWriter['write']>[1]) => Promise<void>,
  ): Promise<void> {
    const message = agentMessage(ctx, `${ctx.taskId}-err`, error);
    await end([{ kind: 'status', payload: { state: 'TASK_STATE_FAILED', message, error, timestamp: now() } }], {
      state: 'TASK_STATE_FAILED',
      statusMessage: message,
      errorMessage: error,
    });
  }
}
