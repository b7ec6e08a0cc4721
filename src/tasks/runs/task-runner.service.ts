import { Inject, Injectable, Logger } from '@nestjs/common';
import { extend } from '../../common/extend.js';
import { isDatabaseUnavailable } from '../../common/db-errors.js';
import { safeError } from '../../common/safe-error.js';
import {
  ORCHESTRATOR,
  type Orchestrator,
  type RunContext,
  type RunEvent,
  UPSTREAM_ERROR,
} from '../../orchestrator/run-event.js';
import { EventLog } from '../event-log/event-log.service.js';
import { TaskReads } from '../repositories/task-reads.repository.js';
import { TaskFileRepository } from '../repositories/task-file.repository.js';
import { fileIdsIn, withBytes } from '../task-files.js';
import type { ArtifactJson } from '../../common/a2a-json.js';
import { ArtifactFold, foldArtifacts, OutputTooLarge, type TaskEventBody } from '../task-events.js';
import { AppConfig } from '../../config/app-config.js';
import { isTerminal } from '../task-state.js';
import { RunEnd, type RunEnding, type RunState } from './run-end.js';
import { RunEventMapper, turnsIn, upstreamEvent, upstreamFiles, upstreamMetadata } from './run-event-mapper.js';
import { RunAbandoned, RunRegistry, type HeldRun, type QueuedInput } from './run-registry.js';
import { RunWriteFailed, RunWriter } from './run-writer.js';
import { QueuedCalls } from './queued-calls.js';
import { InboxInputs } from './inbox-inputs.js';
import { LeaseFence } from './lease-fence.js';
import { Metrics } from '../../metrics/metrics.service.js';
import { StatsRecorder } from '../../stats/stats-recorder.service.js';
import { Prices } from '../../usage/prices.service.js';
import { Budgets } from '../../budgets/budget.service.js';
import { currentContext, inSpan, tracingOn } from '../../tracing/spans.js';
import { InstanceIdentity } from '../../database/instance-identity.js';

export interface RunStart {
  ctx: RunContext;
  /** The message that starts the run, with its seq. */
  first: QueuedInput;
  /** The seq of the last event written when the run starts. */
  cursor: number;
  /** Artifacts of earlier turns of this task. */
  artifacts: ArtifactJson[];
  tokens: { input: number; output: number };
  /** Messages may have been written before the run was registered (a resumed task): read the log for them. */
  catchUp?: boolean;
}

const runAttributes = (ctx: RunContext) => ({
  'a2a.task_id': ctx.taskId,
  'a2a.context_id': ctx.contextId,
  'arbiter.agent_id': ctx.agent.id,
  'arbiter.tenant_id': ctx.tenantId,
});

type TurnEnd = Extract<RunEvent, { type: 'done' | 'input_required' | 'error' }>;

/** How a turn ends that settles its task (or records its reply, when a message waits for another turn). */
type TurnEnding = Extract<RunEnding, { state: 'TASK_STATE_COMPLETED' | 'TASK_STATE_INPUT_REQUIRED' }>;
/** What the run knows when such a turn ends: its closing events, artifacts, tokens and inputs taken. */
type TurnState = RunState & { closing: TaskEventBody[] };

/**
 * Drives a run: the orchestrator's events go through the mapper to the log
 * as they come; a turn that answers or asks settles the task unless another
 * message is waiting (then the run takes another turn); a failure, an abort
 * or a crash ends it through the one terminal writer. Every run ends with a
 * terminal or interrupted status, including runs that fail before the model
 * starts.
 */
@Injectable()
export class TaskRunner {
  private readonly logger = new Logger('TaskRunner');

  constructor(
    private readonly log: EventLog,
    private readonly tasks: TaskReads,
    private readonly registry: RunRegistry,
    private readonly ends: RunEnd,
    @Inject(ORCHESTRATOR) private readonly orchestrator: Orchestrator,
    private readonly metrics: Metrics,
    private readonly fence: LeaseFence,
    private readonly prices: Prices,
    private readonly budgets: Budgets,
    private readonly stats: StatsRecorder,
    private readonly identity: InstanceIdentity,
    private readonly files: TaskFileRepository,
    private readonly config: AppConfig,
  ) {
    metrics.onCollect(metrics.runsInFlight, (g) => g.set(registry.size));
  }

  /**
   * Registers the run and starts it in the background; returns at once. The
   * run outlives the request that started it but continues its trace: its
   * span (`arbiter.run`) is a child of the context active here.
   */
  start(start: RunStart): HeldRun {
    const run = this.registry.hold(start.ctx.tenantId, start.ctx.taskId, start.first, start.cursor);
    if (start.catchUp) this.registry.nudge(run);
    const started = performance.now();
    const running = tracingOn()
      ? inSpan('arbiter.run', { parent: currentContext(), attributes: runAttributes(start.ctx) }, () =>
          this.execute(start, run, started),
        )
      : this.execute(start, run, started);
    // One reaction for both outcomes (not a catch and then a finally: a promise and a closure fewer per run).
    const over = (): void => {
      this.registry.release(run);
      if (!(run.abort.reason instanceof RunAbandoned)) {
        const seconds = (performance.now() - started) / 1000;
        this.metrics.runDuration.observe(seconds);
        this.stats.latency(start.ctx.tenantId, 'duration', seconds);
      }
    };
    running.then(over, (err: unknown) => {
      try {
        this.logger.error({ err: safeError(err), taskId: start.ctx.taskId }, 'run crashed');
      } finally {
        over();
      }
    });
    return run;
  }

  private async execute(start: RunStart, run: HeldRun, started: number): Promise<void> {
    let first = true;
    // Model calls the run reported and this loop has queued for writing.
    const calls = new QueuedCalls();
    // A remote-backed agent's run writes only while its task is leased here: another replica may take it over.
    const writer = new RunWriter(
      start.ctx.taskId,
      this.log,
      start.ctx.agent.constitution.backend ? this.identity.id : undefined,
      run.abort,
    );
    const ctx: RunContext = extend(start.ctx, {
      artifacts: start.artifacts,
      withFileBytes: async (parts) => {
        const ids = fileIdsIn(parts);
        return ids.length ? withBytes(parts, await this.files.bytes(start.ctx.tenantId, ids)) : parts;
      },
      mayAct: (signal) => this.fence.pass(signal),
      // Before each model call: the run's own calls so far committed, then the budgets read (none: no work).
      beforeModelCall: (agentId, reported, abort) => {
        if (!this.budgets.applies(start.ctx.tenantId, agentId)) return undefined;
        return (async () => {
          // The runner may stop reading (the task ended elsewhere): the turn's abort ends the wait then.
          await calls.reached(reported, abort);
          await writer.flush();
          await this.budgets.guard(start.ctx.tenantId, agentId, 'run');
        })();
      },
    });
    const mapper = new RunEventMapper(ctx, turnsIn(ctx.taskId, start.artifacts), start.tokens, (provider, model) =>
      this.prices.of(provider, model),
    );
    const artifacts = new ArtifactFold(start.artifacts, this.config.maxTaskOutputBytes);
    const known = (): RunState => ({ artifacts: artifacts.list(), tokens: mapper.tokens });
    const inputs = new InboxInputs(run, start.first.seq);
    const abort = run.abort;
    try {
      for (;;) {
        let end: TurnEnd | undefined;
        // Read as `for await` reads (the turn told when the reading stops early), but the events the turn
        // has already queued are taken at once, without a promise each.
        const events = this.orchestrator.steps(ctx, inputs, run.abort);
        let reading = true;
        try {
          for (;;) {
            let r: IteratorResult<RunEvent>;
            try {
              const step = events.next();
              r = step instanceof Promise ? await step : step;
            } catch (err) {
              reading = false;
              throw err;
            }
            if (r.done) {
              reading = false;
              break;
            }
            const ev = r.value;
            if (writer.rejected) return; // the task ended elsewhere
            if (ev.type === 'done' || ev.type === 'input_required' || ev.type === 'error') {
              end = ev;
              break;
            }
            run.answer();
            if (ev.type === 'tool_call') {
              this.metrics.toolCalls.inc({ tool: this.metrics.tool(ev.tool), outcome: ev.ok ? 'ok' : 'error' });
            }
            if (ev.type === 'upstream_bound') {
              // A remote-backed agent's upstream task: kept in the task's metadata, written before anything of it.
              // Queued like the events after it: what the upstream sent at once is written in one statement.
              const metadata = upstreamMetadata(ev.upstreamTaskId, ev.upstreamContextId);
              ctx.metadata = { ...ctx.metadata, ...metadata };
              writer.queue([], { metadata });
              continue;
            }
            if (ev.type === 'upstream_status' || ev.type === 'upstream_artifact') {
              const { event, files } = upstreamEvent(ev);
              artifacts.add(event);
              // An interim status message is the task's status message until the next one (GetTask shows it).
              const change = event.kind === 'status' ? { statusMessage: event.payload.message } : {};
              writer.queue([event], { ...change, ...(files.length ? { files } : {}) });
              // Files are large: they are not left to pile up (nor are events an upstream sends faster than stored).
              if (files.length) await writer.flush();
              else await writer.room();
              continue;
            }
            if (ev.type === 'file') {
              // The file's bytes and the artifact that refers to them are written together, in order.
              const { event, file } = mapper.file(ev);
              artifacts.add(event);
              if ((await writer.write([event], { files: [file] })) === null) return; // the task ended elsewhere
              continue;
            }
            const event = mapper.map(ev);
            if (event) {
              if (first) {
                first = false;
                const seconds = (performance.now() - started) / 1000;
                this.metrics.timeToFirstEvent.observe(seconds);
                this.stats.latency(ctx.tenantId, 'first_event', seconds);
              }
              artifacts.add(event);
              writer.enqueue(event);
            }
            if (ev.type === 'usage' && ev.call) calls.add();
          }
        } finally {
          if (reading) {
            // A turn that is over closes at once: nothing to wait for.
            const closed = events.return?.();
            if (closed instanceof Promise) await closed;
          }
        }
        if (writer.rejected) return;
        if (!end) {
          abort.throwIfAborted();
          end = { type: 'error', code: 'agent_error', message: 'the run ended without an answer' };
        }
        if (end.type === 'error') {
          // A spent budget says so as it is; its turn's response artifact is closed, not left open.
          const budget = end.code === 'budget_exhausted';
          const error = budget ? end.message : `${end.code}: ${end.message}`;
          // An upstream's refusal of the send is kept with the task: a blocking caller is answered it as an error.
          const refused = end.refusal ? { metadata: { [UPSTREAM_ERROR]: end.refusal } } : {};
          const state = known();
          if (budget) state.closing = mapper.closing();
          const failed: RunEnding = { state: 'TASK_STATE_FAILED', error, message: mapper.failure(error), ...refused };
          await this.ends.fromRun(run, writer, failed, state);
          return;
        }
        if (end.message) {
          // An upstream's answer: its files stored first, the answer refers to them.
          const { value, files } = upstreamFiles(end.message);
          if (files.length && (await writer.write([], { files })) === null) return;
          end = extend(end, { message: value });
        }
        const ending: RunEnding =
          end.type !== 'done'
            ? { state: 'TASK_STATE_INPUT_REQUIRED', message: end.message ?? mapper.question(end.prompt) }
            : end.bare
              ? { state: 'TASK_STATE_COMPLETED' }
              : { state: 'TASK_STATE_COMPLETED', message: end.message ?? mapper.reply(end.content) };
        const closing = mapper.closing();
        const state = { closing, artifacts: artifacts.list(), tokens: mapper.tokens, inputsUpTo: inputs.taken };
        if (await this.settle(run, writer, ending, state)) return;
        for (const e of closing) artifacts.add(e);
        mapper.nextTurn();
      }
    } catch (err) {
      if (abort.reason instanceof RunAbandoned) return; // given up before its task was stored: nothing to end
      // Stopped because a write of its queued events failed, or for its output (closing its turn aborted the run
      // too): it fails for that, whatever it threw, and is not canceled.
      const why = abort.reason;
      const failure = why instanceof RunWriteFailed ? why.cause : err;
      if (abort.aborted && !(why instanceof RunWriteFailed) && !(err instanceof OutputTooLarge)) {
        const reason = why instanceof Error ? why.message : 'canceled';
        await this.ends.fromRun(run, writer, { state: 'TASK_STATE_CANCELED', error: reason }, known());
        return;
      }
      const outage = isDatabaseUnavailable(failure);
      const tooLarge = failure instanceof OutputTooLarge ? `output_too_large: ${failure.message}` : undefined;
      const error = outage
        ? 'database_unavailable: the run could not be stored while the database was unreachable'
        : (tooLarge ?? 'internal_error: the run failed unexpectedly');
      if (outage || tooLarge) this.logger.warn({ taskId: ctx.taskId, error }, 'run stopped');
      else this.logger.error({ err: safeError(failure), taskId: ctx.taskId }, 'run failed');
      await this.ends.fromRun(
        run,
        writer,
        { state: 'TASK_STATE_FAILED', error, message: mapper.failure(error) },
        known(),
      );
    }
  }

  /**
   * A turn answered or asked. Settles the task, unless a message is waiting that the turn has not seen (sent here
   * or to another replica): then the reply is recorded and the run answers it in another turn. True: the run is over.
   */
  private settle(run: HeldRun, writer: RunWriter, ending: TurnEnding, known: TurnState): Promise<boolean> {
    if (run.inbox.size > 0) return this.recordTurn(run, writer, ending, known);
    // The usual case, written by a reaction on the end (no async frame of its own).
    return this.ends
      .fromRun(run, writer, ending, known)
      .then((r) => (r === 'ended' ? true : this.settleRefused(run, writer, ending, known)));
  }

  /** The end was refused: the task ended meanwhile (the run is over), or has a message this turn did not take. */
  private async settleRefused(run: HeldRun, writer: RunWriter, ending: TurnEnding, known: TurnState): Promise<boolean> {
    const now = await this.tasks.stateOf(run.tenantId, run.taskId);
    if (!now || isTerminal(now.state)) return true;
    await this.registry.catchUp(run);
    if (run.inbox.size === 0) throw new Error('a message for the run could not be read from the log');
    return this.recordTurn(run, writer, ending, known);
  }

  /** The turn's reply, recorded without settling the task (a message waits for the next turn). True: it ended. */
  private async recordTurn(run: HeldRun, writer: RunWriter, ending: TurnEnding, known: TurnState): Promise<boolean> {
    const recorded = await writer.write(known.closing, {
      ...(ending.message ? { historyAppend: [ending.message] } : {}),
      artifacts: foldArtifacts(known.artifacts, known.closing),
      tokens: { ...known.tokens },
    });
    return recorded === null;
  }
}
