import type { EntityList } from './database/data-source-options.js';
import { ConversationEntity } from './native-api/entities/conversation.entity.js';
import { PushConfigEntity } from './push/entities/push-config.entity.js';
import { MemoryEntryEntity } from './orchestrator/entities/memory-entry.entity.js';
import { AgentEntity } from './registry/entities/agent.entity.js';
import { TaskEventEntity } from './tasks/entities/task-event.entity.js';
import { TaskEntity } from './tasks/entities/task.entity.js';
import { TaskFileEntity } from './tasks/entities/task-file.entity.js';
import { OperatorTokenEntity } from './tenants/entities/operator-token.entity.js';
import { TrustedIssuerEntity } from './tenants/entities/trusted-issuer.entity.js';
import { AuditEntryEntity } from './tenants/entities/audit-entry.entity.js';
import { TenantTokenEntity } from './tenants/entities/tenant-token.entity.js';
import { TenantEntity } from './tenants/entities/tenant.entity.js';
import { TenantRegistryEntryEntity } from './tenant-registry/tenant-registry-entry.entity.js';
import { AgentBudgetEntity } from './budgets/entities/agent-budget.entity.js';
import { BudgetThresholdEntity } from './budgets/entities/budget-threshold.entity.js';
import { StatsA2aErrorsEntity, StatsLatencyEntity, StatsTasksEntity } from './stats/entities/stats.entities.js';
import { UsageLedgerEntity } from './usage/entities/usage-ledger.entity.js';
import { UsageDailyEntity, UsageHourlyEntity } from './usage/entities/usage-rollup.entity.js';
import { UsageRequestsEntity } from './usage/entities/usage-requests.entity.js';

/**
 * Every module's entities, gathered above the modules (like `AppModule`), so
 * that `database/` depends on none of them. The app, the TypeORM CLI and the
 * migration tests use this one list.
 */
export const ENTITIES: EntityList = [
  TenantEntity,
  TenantTokenEntity,
  AuditEntryEntity,
  TrustedIssuerEntity,
  OperatorTokenEntity,
  AgentEntity,
  TaskEntity,
  TaskEventEntity,
  TaskFileEntity,
  MemoryEntryEntity,
  ConversationEntity,
  PushConfigEntity,
  TenantRegistryEntryEntity,
  UsageLedgerEntity,
  UsageHourlyEntity,
  UsageDailyEntity,
  UsageRequestsEntity,
  AgentBudgetEntity,
  BudgetThresholdEntity,
  StatsTasksEntity,
  StatsLatencyEntity,
  StatsA2aErrorsEntity,
];
