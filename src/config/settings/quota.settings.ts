import { DurationEnv, IntEnv } from './setting.decorators.js';

/** Each tenant's default quotas, held across all replicas together (`PATCH /v1/admin/tenants/:id/limits` sets a tenant's own). */
export class QuotaSettings {
  /**
   * Default send quota per tenant per minute (new messages on any surface, all replicas together); 0 = unlimited.
   */
  @IntEnv('ARBITER_TENANT_SENDS_PER_MINUTE', 0, 1_000_000) tenantSendsPerMinute = 0;

  /** Default cap on a tenant's tasks running at once (all replicas); 0 = unlimited. */
  @IntEnv('ARBITER_TENANT_MAX_RUNNING_TASKS', 0, 1_000_000) tenantMaxRunningTasks = 100;

  /** Default cap on a tenant's open streams (A2A streaming sends and subscriptions, native SSE); 0 = unlimited. */
  @IntEnv('ARBITER_TENANT_MAX_OPEN_STREAMS', 0, 1_000_000) tenantMaxOpenStreams = 1000;

  /**
   * How often each replica gives back the send quota it holds unused and shares its open-stream counts through
   * PostgreSQL.
   */
  @DurationEnv('ARBITER_QUOTA_SYNC_MS', 50, 60_000) quotaSyncMs = 1_000;

  /**
   * A tenant's or agent's budget (token or cost limit per UTC day or month) whose spend reaches this percentage is
   * recorded once per period: an audit row `budget.threshold` and `arbiter_budget_threshold_crossings_total`. See
   * [Budgets](budgets.md).
   */
  @IntEnv('ARBITER_BUDGET_WARN_PERCENT', 1, 100) budgetWarnPercent = 80;
}
