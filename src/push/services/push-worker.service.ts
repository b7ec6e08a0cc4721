import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { isDatabaseUnavailable } from '../../common/db-errors.js';
import { EgressError, egressRequest, parseHostList, type EgressPolicy } from '../../common/net/egress.js';
import { safeError } from '../../common/safe-error.js';
import { AppConfig } from '../../config/app-config.js';
import { EventLog } from '../../tasks/event-log/event-log.service.js';
import { InstanceIdentity } from '../../database/instance-identity.js';
import { PushDeliveryRepository, type ClaimedConfig } from '../repositories/push-delivery.repository.js';
import { backoffMs, pushHeaders, pushPayload } from './push-payload.js';
import { Metrics } from '../../metrics/metrics.service.js';
import { TaskFiles } from '../../tasks/task-files.service.js';
import { SecretBox, SecretsError } from '../../secrets/secret-box.js';
import { pushSecretAad } from '../push-secrets.js';

/** Configs one pass claims; a full pass is followed by another at once. */
const CLAIM_BATCH = 16;
/** Configs a replica delivers to at once: each is one request at a time, in its log order. */
const MAX_IN_FLIGHT = 64;
/** Log events read at a time per config. */
const READ_BATCH = 100;
/** A webhook's answer is read this far, then dropped (only its status matters). */
const MAX_ANSWER = 64 * 1024;
const MAX_WATCHED = 50_000;

/**
 * Delivers push notifications from the task event log, on every replica.
 * A pass claims due configs (lease + `SKIP LOCKED`), sends each one's
 * undelivered updates in log order, one at a time, and moves its cursor
 * after every 2xx; a failure schedules a retry with backoff (or the
 * dead-letter) and leaves the cursor where it was. So delivery is
 * at-least-once and in order per config: a replica killed mid-send leaves
 * the cursor before the event, and once its claim expires another replica
 * sends that event again, under the same delivery id.
 *
 * Wake-ups: a write to a task with configs (this replica's, or another's
 * heard over NOTIFY) starts a pass at once; a poll every `pushPollMs` finds
 * retries that came due and anything a lost notice hid.
 *
 * A pass does not wait for the configs it claimed: each is delivered on its
 * own (up to `MAX_IN_FLIGHT` at once), so a receiver that answers slowly, or
 * not until the timeout, delays its own config only — not the next pass,
 * another config of the same task, or another tenant's.
 */
@Injectable()
export class PushWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Push');
  private readonly policy: EgressPolicy;
  private readonly abort = new AbortController();
  /** Tasks with active configs: a write to one of them wakes the worker. */
  private watched = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private unwatch: (() => void) | undefined;
  private pass: Promise<void> | undefined;
  /** The configs (row ids) being delivered now, each until it is caught up, fails or is no longer ours. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private again = false;
  private stopped = false;

  constructor(
    private readonly repo: PushDeliveryRepository,
    private readonly config: AppConfig,
    private readonly log: EventLog,
    private readonly identity: InstanceIdentity,
    private readonly metrics: Metrics,
    private readonly files: TaskFiles,
    private readonly box: SecretBox,
  ) {
    this.policy = { allowPrivate: false, allowHosts: parseHostList(config.pushAllowlist) };
  }

  onApplicationBootstrap(): void {
    this.unwatch = this.log.onWrite((taskId) => {
      if (this.watched.has(taskId)) this.wake();
    });
    this.timer = setInterval(() => void this.tick(), this.config.pushPollMs);
    this.timer.unref();
    void this.tick();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.unwatch?.();
    this.abort.abort(new Error('shutting down'));
    await this.pass?.catch(() => undefined);
    await Promise.allSettled(this.inFlight.values());
    // What this replica held goes back now rather than when its claims expire.
    await this.repo.releaseAll(this.identity.id).catch(() => undefined);
  }

  /** A config was created for `taskId`: watch its writes, and send what is due. */
  watch(taskId: string): void {
    this.watched.add(taskId);
    this.wake();
  }

  /** Starts a pass now, or another right after the one running. */
  wake(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.again = true;
      return;
    }
    this.pass = this.run().finally(() => (this.pass = undefined));
  }

  private async tick(): Promise<void> {
    try {
      this.watched = new Set(await this.repo.watchedTasks(MAX_WATCHED));
    } catch (err) {
      if (!isDatabaseUnavailable(err)) this.logger.warn({ err: safeError(err) }, 'push: cannot read watched tasks');
    }
    this.wake();
  }

  private async run(): Promise<void> {
    do {
      this.again = false;
      // When every slot is taken, the next delivery to finish wakes a pass.
      const room = Math.min(CLAIM_BATCH, MAX_IN_FLIGHT - this.inFlight.size);
      if (room <= 0) return;
      let claimed: ClaimedConfig[];
      try {
        claimed = await this.repo.claim(this.identity.id, this.config.pushLeaseMs, room);
      } catch (err) {
        // The database is away: the next poll tries again.
        if (!isDatabaseUnavailable(err)) this.logger.warn({ err: safeError(err) }, 'push: claim failed');
        return;
      }
      for (const c of claimed) {
        // Claimed again while this replica still delivers it (its lease ran out mid-send): the delivery goes on.
        if (this.inFlight.has(c.id)) continue;
        const delivery = this.deliver(c)
          .catch((err: unknown) => {
            // Its claim expires by itself; whoever takes it next starts from the stored cursor.
            this.logger.warn({ err: safeError(err), config: c.id, task_id: c.taskId }, 'push: delivery failed');
          })
          .finally(() => {
            this.inFlight.delete(c.id);
            this.wake();
          });
        this.inFlight.set(c.id, delivery);
      }
      if (claimed.length === room) this.again = true;
    } while (this.again && !this.stopped);
  }

  /** Sends one config's undelivered updates in order, until caught up or a send fails. */
  private async deliver(claimed: ClaimedConfig): Promise<void> {
    const owner = this.identity.id;
    const lease = this.config.pushLeaseMs;
    const c = this.opened(claimed);
    if (typeof c === 'string') return await this.failed(claimed, c).catch(() => undefined);
    try {
      let cursor = c.deliveredSeq;
      for (;;) {
        if (this.stopped) return await this.repo.release(c.id, owner);
        const events = await this.log.readBatch(c.tenantId, c.taskId, cursor, READ_BATCH);
        if (events.length === 0) return await this.repo.release(c.id, owner);
        /** Events up to here need no delivery (not pushed): the cursor may pass them. */
        let skipTo = cursor;
        for (const e of events) {
          // A file's bytes go to the webhook as they go to a stream (read only for events that carry a file).
          const body = pushPayload(c.dialect, await this.files.event(c.tenantId, e), {
            id: c.taskId,
            contextId: c.contextId,
          });
          if (body === undefined) {
            skipTo = e.seq;
            continue;
          }
          const failure = await this.send(c, e.seq, body);
          this.metrics.pushDeliveries.inc({ outcome: failure === null ? 'delivered' : 'failed' });
          if (failure !== null) {
            if (this.stopped) return await this.repo.release(c.id, owner);
            if (skipTo > cursor) await this.repo.advance(c.id, owner, skipTo, false, lease);
            await this.failed(c, failure);
            return;
          }
          if (!(await this.repo.advance(c.id, owner, e.seq, true, lease))) return; // deleted, or no longer ours
          cursor = skipTo = e.seq;
        }
        if (skipTo > cursor) {
          if (!(await this.repo.advance(c.id, owner, skipTo, false, lease))) return;
          cursor = skipTo;
        }
      }
    } catch (err) {
      // The claim expires by itself; whoever takes it next starts from the stored cursor.
      if (!isDatabaseUnavailable(err)) {
        this.logger.warn({ err: safeError(err), config: c.id, task_id: c.taskId }, 'push: delivery pass failed');
      }
    }
  }

  /** The config with its stored secrets opened, or why they do not open (a failed attempt, like a refused POST). */
  private opened(c: ClaimedConfig): ClaimedConfig | string {
    try {
      const open = (v: string | null, field: 'token' | 'credentials'): string | null =>
        v === null ? null : this.box.fromStored(v, pushSecretAad(c.tenantId, c.taskId, c.configId, field));
      return { ...c, token: open(c.token, 'token'), credentials: open(c.credentials, 'credentials') };
    } catch (err) {
      if (!(err instanceof SecretsError)) throw err;
      this.logger.error({ config: c.id, task_id: c.taskId, reason: err.code }, `push: ${err.message}`);
      return `the webhook's stored credentials do not open (${err.code})`;
    }
  }

  /** One POST; null on 2xx, else why it failed (no secrets: status codes and transport errors only). */
  private async send(c: ClaimedConfig, seq: number, body: unknown): Promise<string | null> {
    try {
      const res = await egressRequest(c.url, this.policy, {
        method: 'POST',
        headers: pushHeaders(c, seq),
        body: JSON.stringify(body),
        timeoutMs: this.config.pushTimeoutMs,
        maxBytes: MAX_ANSWER,
        maxRedirects: 0,
        signal: this.abort.signal,
      });
      if (res.status >= 200 && res.status < 300) return null;
      return `HTTP ${res.status}`;
    } catch (err) {
      if (err instanceof EgressError) {
        return err.code === 'too_many_redirects' ? 'the webhook answered with a redirect (not followed)' : err.message;
      }
      throw err;
    }
  }

  private async failed(c: ClaimedConfig, failure: string): Promise<void> {
    const failures = c.attempts + 1;
    const dead = await this.repo.fail(c.id, this.identity.id, failure, {
      delayMs: backoffMs(failures, this.config.pushBackoffBaseMs, this.config.pushBackoffMaxMs),
      maxAttempts: this.config.pushMaxAttempts,
      maxAgeMs: this.config.pushMaxAgeMs,
    });
    const where = { config: c.id, task_id: c.taskId, origin: originOf(c.url), failures, failure };
    if (dead) {
      this.metrics.pushDeadLetters.inc();
      this.logger.warn(where, 'push: webhook dead-lettered after repeated failures');
    } else this.logger.log(where, 'push: delivery failed; will retry');
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}
