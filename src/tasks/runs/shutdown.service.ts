import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { CancelReason, RunRegistry } from './run-registry.js';

/**
 * On shutdown, runs still in flight get the grace period to finish; the rest
 * are canceled with "server shutting down", so each ends with a terminal
 * event (and every stream watching it closes) before the database goes away.
 */
@Injectable()
export class RunShutdown implements BeforeApplicationShutdown {
  private readonly logger = new Logger('RunShutdown');

  constructor(
    private readonly registry: RunRegistry,
    private readonly config: AppConfig,
  ) {}

  async beforeApplicationShutdown(): Promise<void> {
    const runs = this.registry.all();
    if (runs.length === 0) return;
    this.logger.log(`${runs.length} run(s) in flight; waiting up to ${this.config.shutdownGraceMs} ms`);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.config.shutdownGraceMs)));
    await Promise.race([Promise.all(runs.map((r) => r.finished)), grace]);
    clearTimeout(timer);
    const left = this.registry.all();
    for (const run of left) run.abort.abort(new CancelReason('server shutting down'));
    await Promise.all(left.map((r) => r.finished));
    if (left.length) this.logger.warn(`canceled ${left.length} run(s): server shutting down`);
  }
}
