import { Controller, Get, HttpCode, Res } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import type { DataSource } from 'typeorm';
import { Public } from '../common/auth.decorators.js';
import { ReplicaChannel } from '../database/replica-channel.service.js';
import { Lifecycle } from './lifecycle.service.js';
import { ApiTags } from '@nestjs/swagger';
import { AnyQuery } from '../common/body-reader.interceptor.js';

const READY_TIMEOUT_MS = 2_000;

@Public()
@ApiTags('health')
@AnyQuery()
@Controller('v1/health')
export class HealthController {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly lifecycle: Lifecycle,
    private readonly notices: ReplicaChannel,
  ) {}

  /** Liveness: the process answers. */
  @Get()
  @HttpCode(200)
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /**
   * Readiness: not shutting down, and the database answers within 2 s. On
   * PostgreSQL it also reports the connection that hears other replicas'
   * writes; while that reconnects the replica still serves (its streams and
   * runs re-read the log every second instead), so it stays ready.
   */
  @Get('ready')
  async ready(@Res({ passthrough: true }) res: Response): Promise<Record<string, string>> {
    if (this.lifecycle.shuttingDown) {
      res.status(503);
      return { status: 'unavailable', reason: 'shutting down' };
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.ds.query('SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS);
        }),
      ]);
      if (!this.notices.enabled) return { status: 'ready', database: 'ok' };
      return { status: 'ready', database: 'ok', notices: this.notices.connected ? 'ok' : 'reconnecting' };
    } catch {
      res.status(503);
      return { status: 'unavailable', database: 'unreachable' };
    } finally {
      clearTimeout(timer);
    }
  }
}
