import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { TenantEntity } from '../../tenants/entities/tenant.entity.js';
import { TaskEntity } from './task.entity.js';

/**
 * The bytes of one file part of a task (a user's file, or one a tool wrote).
 * The log and the task row hold the part with a reference to it
 * (`x-arbiter.file_ref`); reads render the part with its bytes again.
 */
@Entity({ name: 'task_files' })
@Index('idx_task_files_task', ['taskId'])
@Check('ck_task_files_size', `"size" = octet_length("bytes")`)
export class TaskFileEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @ManyToOne(() => TenantEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'tenant_id', foreignKeyConstraintName: 'fk_task_files_tenant' })
  tenant?: TenantEntity;

  @Column({ name: 'task_id', type: 'varchar', length: 64 })
  taskId: string;

  @ManyToOne(() => TaskEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'task_id', foreignKeyConstraintName: 'fk_task_files_task' })
  task?: TaskEntity;

  @Column({ name: 'media_type', type: 'varchar', length: 128 })
  mediaType: string;

  @Column({ type: 'varchar', length: 256, nullable: true })
  filename: string | null;

  @Column({ type: 'integer' })
  size: number;

  @Column({ type: 'bytea' })
  bytes: Buffer;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
