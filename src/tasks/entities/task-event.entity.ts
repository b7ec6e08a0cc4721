import { Column, CreateDateColumn, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { TaskEntity } from './task.entity.js';

/**
 * The append-only event log: gap-free `seq` per task, starting at 1. No foreign key to the task (its check per
 * event was a sixth of a new task's cost): events are written only with their task's row, and deleted with it by
 * a trigger (migration TaskEventsCascade).
 */
@Entity({ name: 'task_events' })
export class TaskEventEntity {
  @PrimaryColumn({ name: 'task_id', type: 'varchar', length: 64 })
  taskId: string;

  @PrimaryColumn({ type: 'integer' })
  seq: number;

  @ManyToOne(() => TaskEntity, { createForeignKeyConstraints: false })
  @JoinColumn({ name: 'task_id' })
  task?: TaskEntity;

  @Column({ type: 'varchar', length: 32 })
  kind: string;

  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
