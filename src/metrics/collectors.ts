import { Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { sseStreams } from '../common/sse.js';
import { Metrics } from './metrics.service.js';

interface PoolGauges {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** Gauges read at scrape time from things that keep their own counts (the database pool, open SSE streams). */
@Injectable()
export class MetricsCollectors implements OnModuleInit {
  constructor(
    private readonly metrics: Metrics,
    @InjectDataSource() private readonly ds: DataSource,
  ) {}

  onModuleInit(): void {
    this.metrics.onCollect(this.metrics.sseSubscribers, (g) => g.set(sseStreams.open));
    this.metrics.onCollect(this.metrics.dbPool, (g) => {
      // TypeORM's postgres driver keeps its pg.Pool (or the embedded stand-in) as `master`.
      const pool = (this.ds.driver as unknown as { master?: Partial<PoolGauges> }).master;
      if (typeof pool?.totalCount !== 'number') return;
      g.set({ state: 'total' }, pool.totalCount);
      g.set({ state: 'idle' }, pool.idleCount ?? 0);
      g.set({ state: 'waiting' }, pool.waitingCount ?? 0);
    });
  }
}
