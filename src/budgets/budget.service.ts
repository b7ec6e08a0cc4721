import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleInit } from '@nestjs/common';
import type { ChangeBy, TenantPrincipal } from '../common/auth.decorators.js';
import { DomainError } from '../common/errors.js';
import { safeError } from '../common/safe-error.js';
import { AppConfig } from '../config/app-config.js';
import { ReplicaChannel } from '../database/replica-channel.service.js';
import { Metrics } from '../metrics/metrics.service.js';
import { AgentCatalog } from '../registry/services/agent-catalog.service.js';
import { ACCESS_CHANNEL, changeOf } from '../tenants/services/open-streams.service.js';
import { AuditLog } from '../tenants/services/audit-log.service.js';
import { Prices } from '../usage/prices.service.js';
import {
  BUDGET_KEYS,
  checkAgainst,
  exhausted,
  exhaustedMessage,
  hasLimits,
  hasRequestLimit,
  NO_LIMITS,
  parseLimits,
  periodOf,
  periods,
  SPEND_KEYS,
  type BudgetLimits,
} from './budget-limits.js';
import { BudgetRepository, type TenantBudgets } from './budget.repository.js';
import { BudgetViews, windowOf, type BudgetUse } from './budget-views.service.js';

/** The channel of agent budget changes: the tenant's id. (Tenant budgets ride on `tenant_limits` notices.) */
export const BUDGETS_CHANNEL = 'arbiter_budgets';

/** The quota keys the tenant limits body carries beside the budgets. */
export const QUOTA_KEYS = ['sends_per_minute', 'max_running_tasks', 'max_open_streams'] as const;

/**
 * Token, cost and request budgets per tenant and per agent (docs/budgets.md),
 * by UTC day and month. Which tenants have budgets is kept in memory on every
 * replica (loaded at start, dropped per tenant by a notice when a budget
 * changes, and read again from the database while the notice connection is
 * down), so a tenant without budgets costs a map lookup and nothing else.
 * Spend is always read from the database (the daily rollup), so every
 * replica sees every committed call.
 */
@Injectable()
export class Budgets implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger('Budgets');
  /** Tenants with budgets, when `complete`: a tenant not in it has none (unless listed in `unknown`). */
  private known = new Map<string, TenantBudgets | null>();
  private complete = false;
  private readonly unknown = new Set<string>();
  private generation = 0;

  constructor(
    private readonly repo: BudgetRepository,
    private readonly channel: ReplicaChannel,
    private readonly prices: Prices,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
    private readonly audit: AuditLog,
    private readonly catalog: AgentCatalog,
    private readonly views: BudgetViews,
  ) {}

  onModuleInit(): void {
    this.channel.listenApplied(BUDGETS_CHANNEL, (tenantId) => this.forget(tenantId));
    this.channel.listenApplied(ACCESS_CHANNEL, (payload) => {
      const c = changeOf(payload);
      if (c?.kind === 'tenant_limits') this.forget(c.tenantId);
    });
    this.channel.onReconnect(() => {
      this.reset();
      void this.loadAll();
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.loadAll();
  }

  /** Drops what is known of a tenant's budgets here (they changed). */
  forget(tenantId: string): void {
    this.generation++;
    this.known.delete(tenantId);
    this.unknown.add(tenantId);
  }

  private reset(): void {
    this.generation++;
    this.complete = false;
    this.known.clear();
    this.unknown.clear();
  }

  private async loadAll(): Promise<void> {
    const g = this.generation;
    try {
      const all = await this.repo.load();
      if (g !== this.generation) return;
      this.known = new Map(all);
      this.complete = true;
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'could not load budgets; they are read per request until then');
    }
  }

  private usable(): boolean {
    return !this.channel.enabled || this.channel.connected;
  }

  /** The tenant's budgets if known here without a read (null: none); undefined: to be read. */
  cached(tenantId: string): TenantBudgets | null | undefined {
    if (!this.usable()) return undefined;
    const k = this.known.get(tenantId);
    if (k !== undefined) return k;
    return this.complete && !this.unknown.has(tenantId) ? null : undefined;
  }

  async budgetsOf(tenantId: string): Promise<TenantBudgets | null> {
    const c = this.cached(tenantId);
    if (c !== undefined) return c;
    const g = this.generation;
    const b = (await this.repo.load(tenantId)).get(tenantId) ?? null;
    if (g === this.generation && this.usable()) {
      this.known.set(tenantId, b);
      this.unknown.delete(tenantId);
    }
    return b;
  }

  /**
   * Refuses a run of `agentId` when the tenant or the agent has spent a
   * budget (`budget_exhausted`, with when it resets). Undefined — no work at
   * all — when neither has a budget; else a promise to await.
   */
  guard(tenantId: string, agentId: string, where: 'start' | 'run'): Promise<void> | undefined {
    return this.applies(tenantId, agentId) ? this.check(tenantId, agentId, where) : undefined;
  }

  /**
   * Whether a request budget applies to `agentId`'s messages, so that the statement taking one counts it (true
   * when not known here). Without one, a message is not counted: the common case writes nothing more.
   */
  countsRequests(tenantId: string, agentId: string): boolean {
    const c = this.cached(tenantId);
    if (c === null) return false;
    if (c === undefined) return true;
    return hasRequestLimit(c.tenant) || hasRequestLimit(c.agents.get(agentId));
  }

  /** Whether a budget may apply to `agentId`'s calls (false: known here to have none, without a read). */
  applies(tenantId: string, agentId: string): boolean {
    const c = this.cached(tenantId);
    return !(c === null || (c && !c.tenant && !c.agents.has(agentId)));
  }

  private async check(tenantId: string, agentId: string, where: 'start' | 'run'): Promise<void> {
    const b = await this.budgetsOf(tenantId);
    const own = b?.agents.get(agentId);
    if (!b || (!b.tenant && !own)) return;
    const w = periods();
    const spend = await this.repo.spend(tenantId, agentId, windowOf(w));
    // A run's model calls are checked against token and cost budgets; its message was counted when taken.
    const keys = where === 'start' ? BUDGET_KEYS : SPEND_KEYS;
    const t = b.tenant ? exhausted(b.tenant, spend.tenant, keys) : undefined;
    const a = own ? exhausted(own, spend.agent, keys) : undefined;
    const hit = t
      ? { e: t, whose: `tenant ${b.tenantName}`, kind: 'tenant' }
      : a
        ? { e: a, whose: `agent ${agentId}`, kind: 'agent' }
        : undefined;
    if (!hit) return;
    this.metrics.budgetRefusals.inc({ budget: hit.e.key, whose: hit.kind, where });
    throw DomainError.budgetExhausted(exhaustedMessage(hit.whose, hit.e), w[periodOf(hit.e.key)].resetsAt, hit.e.key);
  }

  // ---- changes ----

  /**
   * Checks the budget keys of a tenant limits change (`PATCH
   * /v1/admin/tenants/:id/limits`): costs need prices, and no budget may be
   * set below what the tenant already spent in its period. Throws a 400
   * naming the field; returns the budget limits given.
   */
  async checkTenantLimits(tenantId: string, body: Record<string, unknown>): Promise<Partial<BudgetLimits>> {
    const { limits, errors } = parseLimits(body, {
      pricesConfigured: this.prices.currency !== null,
      otherKeys: QUOTA_KEYS,
    });
    if (errors.length) throw DomainError.validation(errors);
    if (!Object.values(limits).some((v) => v !== null && v !== undefined)) return limits;
    const spend = await this.repo.spend(tenantId, '', windowOf(periods()));
    const problems = checkAgainst(limits, spend.tenant);
    if (problems.length) throw DomainError.validation(problems);
    return limits;
  }

  /** `PUT /v1/agents/:id/budget`: the agent's budgets (keys left out: none), within the tenant's. */
  async setAgent(
    p: TenantPrincipal,
    agentId: string,
    body: unknown,
    by: ChangeBy,
  ): Promise<{ agent: string } & BudgetUse> {
    const { limits, errors } = parseLimits(body, { pricesConfigured: this.prices.currency !== null });
    if (errors.length) throw DomainError.validation(errors);
    if (!(await this.catalog.resolve(p.tenantId, agentId))) throw DomainError.notFound('agent');
    const full: BudgetLimits = { ...NO_LIMITS, ...limits };
    const w = periods();
    const tenant = (await this.repo.load(p.tenantId)).get(p.tenantId)?.tenant ?? undefined;
    const spend = await this.repo.spend(p.tenantId, agentId, windowOf(w));
    const problems = checkAgainst(full, spend.agent, tenant);
    if (problems.length) throw DomainError.validation(problems);
    await this.change(p.tenantId, async (em) => {
      if (hasLimits(full)) await this.repo.upsertAgent(em, p.tenantId, agentId, full);
      else await this.repo.deleteAgent(em, p.tenantId, agentId);
      await this.audit.record(em, {
        actor: 'tenant',
        action: 'agent.budget',
        tenantId: p.tenantId,
        detail: { agent_id: agentId, token_prefix: p.tokenPrefix, ...full },
        by,
      });
    });
    return { agent: agentId, ...this.views.use(full, spend.agent, w) };
  }

  /** `DELETE /v1/agents/:id/budget`. */
  async clearAgent(p: TenantPrincipal, agentId: string, by: ChangeBy): Promise<void> {
    await this.change(p.tenantId, async (em) => {
      if (!(await this.repo.deleteAgent(em, p.tenantId, agentId))) throw DomainError.notFound('agent budget');
      await this.audit.record(em, {
        actor: 'tenant',
        action: 'agent.budget.delete',
        tenantId: p.tenantId,
        detail: { agent_id: agentId, token_prefix: p.tokenPrefix },
        by,
      });
    });
  }

  /** Commits a change of the tenant's budgets and answers once every replica has dropped what it knew of them. */
  private async change(tenantId: string, work: Parameters<BudgetRepository['transaction']>[0]): Promise<void> {
    const echo = this.channel.appliedEverywhere(BUDGETS_CHANNEL, tenantId);
    await this.repo.transaction(async (em) => {
      await work(em);
      await em.query(`SELECT pg_notify($1, $2)`, [BUDGETS_CHANNEL, tenantId]);
    });
    this.forget(tenantId);
    await echo.done;
  }
}
