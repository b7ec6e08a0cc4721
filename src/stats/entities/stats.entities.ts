import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The task and A2A statistics the overview charts, summed per tenant and
 * period: a minute (`grain` 1) or an hour (`grain` 60). Each replica counts
 * in memory and adds its counts every few seconds (`INSERT … ON CONFLICT DO
 * UPDATE`, `StatsRecorder`), so every replica's work is in them and the send
 * path writes nothing more.
 */
abstract class StatsKey {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** Minutes per period: 1 or 60. */
  @PrimaryColumn({ type: 'smallint' })
  grain: number;

  /** The period's start (UTC). */
  @PrimaryColumn({ type: 'timestamptz' })
  bucket: Date;
}

/** Tasks started and reaching each outcome in a period. */
@Entity({ name: 'stats_tasks' })
@Index('idx_stats_tasks_bucket', ['grain', 'bucket'])
export class StatsTasksEntity extends StatsKey {
  @Column({ type: 'integer', default: 0 })
  started: number;

  @Column({ type: 'integer', default: 0 })
  completed: number;

  /** Failed or rejected. */
  @Column({ type: 'integer', default: 0 })
  failed: number;

  @Column({ type: 'integer', default: 0 })
  canceled: number;

  /** Entering input-required (or auth-required). */
  @Column({ name: 'input_required', type: 'integer', default: 0 })
  inputRequired: number;
}

/** Histograms of run times: how many runs fell in each fixed log-scale slot (`stats/histogram.ts`). */
@Entity({ name: 'stats_latency' })
@Index('idx_stats_latency_bucket', ['grain', 'bucket'])
export class StatsLatencyEntity extends StatsKey {
  /** `first_event` (run start to its first event) or `duration` (run start to its end). */
  @PrimaryColumn({ type: 'varchar', length: 16 })
  kind: string;

  @PrimaryColumn({ type: 'smallint' })
  slot: number;

  @Column({ type: 'integer', default: 0 })
  n: number;
}

/** A2A calls answered with an error, by binding and error code. */
@Entity({ name: 'stats_a2a_errors' })
@Index('idx_stats_a2a_errors_bucket', ['grain', 'bucket'])
export class StatsA2aErrorsEntity extends StatsKey {
  /** `jsonrpc`, `rest` or `grpc`. */
  @PrimaryColumn({ type: 'varchar', length: 16 })
  binding: string;

  /** The error code as the binding answers it (`-32001`, `TASK_NOT_FOUND`, `NOT_FOUND` …). */
  @PrimaryColumn({ type: 'varchar', length: 64 })
  code: string;

  @Column({ type: 'integer', default: 0 })
  n: number;
}
