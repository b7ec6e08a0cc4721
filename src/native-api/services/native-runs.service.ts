import { createHash, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { AppConfig } from '../../config/app-config.js';
import { DomainError } from '../../common/errors.js';
import { detachSse, type SseFrame } from '../../common/sse.js';
import { Lifecycle } from '../../health/lifecycle.service.js';
import type { ResolvedAgent } from '../../registry/services/agents.js';
import { TaskService } from '../../tasks/task.service.js';
import { OpenStreams } from '../../tenants/services/open-streams.service.js';
import { NativeTail, streamError } from './native-tail.service.js';
import { QuotaService } from '../../quotas/quota.service.js';
import { releaseOnClose } from '../../common/sse.js';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const KEY = /^[\x21-\x7e]{1,255}$/;
const FINGERPRINT = 'x-arbiter.request_fingerprint';

export interface NativeStart {
  principal: TenantPrincipal;
  agent: ResolvedAgent;
  message: string;
  contextId?: string;
  /** What makes two requests "the same" for `Idempotency-Key`. */
  request: unknown;
}

/**
 * Starts native runs (`/v1/orchestrate`, `/v1/agents/:id/chat`, conversation
 * messages) on the task machinery and streams them in the native event
 * catalogue. `Idempotency-Key` is durable: the key becomes the messageId of
 * the request's task (unique per tenant and agent), so a retry — on any
 * replica, after a restart — finds that task and replays its events.
 */
@Injectable()
export class NativeRuns {
  constructor(
    private readonly tasks: TaskService,
    private readonly tail: NativeTail,
    private readonly streams: OpenStreams,
    private readonly config: AppConfig,
    private readonly lifecycle: Lifecycle,
    private readonly quotas: QuotaService,
  ) {}

  /**
   * One native POST: checks `Idempotency-Key`, builds the start (agent
   * resolution and validation stay with the caller), starts or finds the
   * run, and streams it.
   */
  async serve(req: Request, res: Response, build: () => Promise<NativeStart>): Promise<void> {
    const key = this.idempotencyKey(req);
    const start = await build();
    // The stream's slot before the task: a tenant at its stream cap gets no run it cannot watch.
    const slot = this.quotas.openStream(start.principal);
    try {
      const run = await this.start(start, key);
      await this.stream(start.principal, run, res);
    } catch (err) {
      slot();
      throw err;
    }
    releaseOnClose(res, slot);
  }

  /** Reads and checks the `Idempotency-Key` header. */
  private idempotencyKey(req: Request): string | undefined {
    const raw = req.headers['idempotency-key'];
    if (raw === undefined) return undefined;
    if (typeof raw !== 'string' || !KEY.test(raw)) {
      throw DomainError.validation([
        { field: 'Idempotency-Key', messages: ['Idempotency-Key must be 1-255 printable ASCII characters'] },
      ]);
    }
    return raw;
  }

  private async start(s: NativeStart, key: string | undefined): Promise<{ taskId: string; replayed: boolean }> {
    if (this.lifecycle.shuttingDown) throw new DomainError('unavailable', 'server is shutting down; retry the request');
    const fingerprint = sha256(JSON.stringify(s.request));
    const r = await this.quotas.admitRun(s.principal, (held, cap) =>
      this.tasks.create(
        {
          tenantId: s.principal.tenantId,
          agent: s.agent,
          message: {
            messageId: key ? `idem:${sha256(key).slice(0, 48)}` : randomUUID(),
            role: 'ROLE_USER',
            parts: [{ text: s.message }],
            ...(s.contextId ? { contextId: s.contextId } : {}),
          },
          metadata: key ? { [FINGERPRINT]: fingerprint } : {},
          ...(s.principal.subject ? { subject: s.principal.subject } : {}),
        },
        { held, runningCap: cap },
      ),
    );
    if (r.duplicate && r.snapshot.metadata[FINGERPRINT] !== fingerprint) {
      throw new DomainError(
        'unprocessable',
        'this Idempotency-Key was already used for a different request; use a new key for a new request',
      );
    }
    return { taskId: r.taskId, replayed: Boolean(r.duplicate) };
  }

  /** Streams the run's events from the first one (a replay sends the stored ones, then live ones). */
  private async stream(
    principal: TenantPrincipal,
    run: { taskId: string; replayed: boolean },
    res: Response,
  ): Promise<void> {
    res.setHeader('Arbiter-Request-Id', run.taskId);
    if (run.replayed) res.setHeader('Idempotent-Replayed', 'true');
    const abort = new AbortController();
    const release = this.streams.hold(principal, abort);
    let frames: AsyncIterable<SseFrame>;
    try {
      frames = await this.tail.open(principal.tenantId, run.taskId, 0, abort.signal);
    } catch (err) {
      release();
      throw err;
    }
    detachSse(
      res,
      frames,
      { heartbeatMs: this.config.sseHeartbeatMs, abort, onError: (err) => streamError(err, run.taskId) },
      release,
    );
  }
}
