import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { TalliedCounter } from './tally.js';

/**
 * How often the event loop's delay is sampled (`arbiter_nodejs_eventloop_lag_*`): a timer that wakes the process
 * each time, busy or idle. The Prometheus client's default, 10 ms, woke an idle replica a hundred times a second
 * (8–10 ms of CPU a second here, and every wake at a lone caller's pace finds the caches cold); at 100 ms a
 * scrape every 15 s still reads 150 samples, and a stall longer than 100 ms always shows.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * Label values from sets the operator or tenants define (agent ids, model
 * ids): the first `max` distinct values get their own series, later ones
 * share `other` — so a tenant creating agents cannot grow the scrape without
 * bound.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();
  constructor(private readonly max: number) {}
  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return 'other';
    this.seen.add(value);
    return value;
  }
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The application's Prometheus instruments, one registry per application
 * (tests run several in one process). Everything is a counter, gauge or
 * histogram updated where the work happens, or a gauge read at scrape time
 * (`collect`), so a scrape costs the hot path nothing. No label carries a
 * task id or a token; only the usage counters carry a tenant id (bounded,
 * like agents and models).
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();
  private readonly agents = new BoundedLabel(200);
  private readonly models = new BoundedLabel(50);
  private readonly tools = new BoundedLabel(50);
  private readonly tenants = new BoundedLabel(100);

  readonly httpRequests = new TalliedCounter({
    name: 'arbiter_http_requests_total',
    help: 'HTTP requests by method, route template and status',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'arbiter_http_request_duration_seconds',
    help: 'HTTP request time to the end of the response (streams: their whole life), by route template',
    labelNames: ['method', 'route'],
    buckets: SECONDS,
    registers: [this.registry],
  });
  readonly a2aCalls = new TalliedCounter({
    name: 'arbiter_a2a_requests_total',
    help: 'A2A calls by binding (jsonrpc, rest, grpc), method, dialect (1.0, 0.3) and error code ("" when it succeeded)',
    labelNames: ['binding', 'method', 'dialect', 'error'],
    registers: [this.registry],
  });
  readonly tasksEnded = new TalliedCounter({
    name: 'arbiter_tasks_settled_total',
    help: 'Tasks reaching a terminal or interrupted state, by state and agent (agents past 200 distinct ids: "other"; bulk ends: "*")',
    labelNames: ['state', 'agent'],
    registers: [this.registry],
  });
  readonly runsInFlight = new Gauge({
    name: 'arbiter_runs_in_flight',
    help: 'Runs this replica holds',
    registers: [this.registry],
  });
  readonly timeToFirstEvent = new Histogram({
    name: 'arbiter_run_first_event_seconds',
    help: 'From a run start to its first event written (streamed text, a tool call …)',
    buckets: SECONDS,
    registers: [this.registry],
  });
  readonly runDuration = new Histogram({
    name: 'arbiter_run_duration_seconds',
    help: 'From a run start to its end (settled, failed or canceled)',
    buckets: SECONDS,
    registers: [this.registry],
  });
  readonly modelCalls = new Counter({
    name: 'arbiter_model_calls_total',
    help: 'Model calls by provider, model and outcome (ok or the provider error code), retries included',
    labelNames: ['provider', 'model', 'outcome'],
    registers: [this.registry],
  });
  readonly modelLatency = new Histogram({
    name: 'arbiter_model_call_duration_seconds',
    help: 'Model call time, request to end of stream, by provider and outcome',
    labelNames: ['provider', 'outcome'],
    buckets: SECONDS,
    registers: [this.registry],
  });
  readonly modelTokens = new Counter({
    name: 'arbiter_model_tokens_total',
    help: 'Tokens reported by providers, by provider, model and direction (input, output)',
    labelNames: ['provider', 'model', 'direction'],
    registers: [this.registry],
  });
  readonly usageTokens = new Counter({
    name: 'arbiter_usage_tokens_total',
    help: 'Tokens of accounted model calls (committed with their task event), by tenant id, agent, model and kind (input, output, cached; cached is part of input); past 100 tenants, 200 agents, 50 models: "other"',
    labelNames: ['tenant', 'agent', 'model', 'kind'],
    registers: [this.registry],
  });
  readonly usageCost = new Counter({
    name: 'arbiter_usage_cost_total',
    help: 'Cost of accounted model calls at the configured prices (ARBITER_PRICES_FILE), in its currency, by tenant id, agent and model',
    labelNames: ['tenant', 'agent', 'model', 'currency'],
    registers: [this.registry],
  });
  readonly breakerState = new Gauge({
    name: 'arbiter_provider_breaker_open',
    help: 'Circuit breakers by provider: 1 open, 0.5 half-open, 0 closed (one series per provider and model)',
    labelNames: ['provider', 'model'],
    registers: [this.registry],
  });
  readonly toolCalls = new Counter({
    name: 'arbiter_tool_calls_total',
    help: 'Tool calls of the turn loop (/a2a, /mcp, /fetch, /search, /mem, /agent …) by tool and outcome',
    labelNames: ['tool', 'outcome'],
    registers: [this.registry],
  });
  readonly sseSubscribers = new Gauge({
    name: 'arbiter_sse_streams_open',
    help: 'SSE streams open in this process (A2A and native)',
    registers: [this.registry],
  });
  readonly dbPool = new Gauge({
    name: 'arbiter_db_pool_connections',
    help: 'Database pool connections by state (total, idle, waiting clients)',
    labelNames: ['state'],
    registers: [this.registry],
  });
  readonly writeBatch = new Histogram({
    name: 'arbiter_write_batch_size',
    help: 'Writes per group-commit statement (task creates and event appends)',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [this.registry],
  });
  readonly leaseSweeps = new Counter({
    name: 'arbiter_lease_sweeps_total',
    help: 'Sweeps for tasks whose owner stopped renewing their lease',
    registers: [this.registry],
  });
  readonly orphansEnded = new Counter({
    name: 'arbiter_lease_orphans_ended_total',
    help: 'Tasks ended "owner lost" by a sweep',
    registers: [this.registry],
  });
  readonly runsFenced = new Gauge({
    name: 'arbiter_runs_fenced',
    help: 'Runs waiting to act until this replica is back in touch with the database',
    registers: [this.registry],
  });
  readonly leaseFences = new Counter({
    name: 'arbiter_lease_fences_total',
    help: 'Times this replica lost touch with the database for half a lease and held its runs back from acting',
    registers: [this.registry],
  });
  readonly pushDeliveries = new Counter({
    name: 'arbiter_push_deliveries_total',
    help: 'Webhook POSTs by outcome (delivered, failed)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly pushDeadLetters = new Counter({
    name: 'arbiter_push_dead_letters_total',
    help: 'Push configs dead-lettered after repeated failures',
    registers: [this.registry],
  });
  readonly quotaRefusals = new Counter({
    name: 'arbiter_quota_refusals_total',
    help: 'Requests refused by a tenant quota, by kind (sends, running, streams)',
    labelNames: ['kind'],
    registers: [this.registry],
  });

  readonly budgetRefusals = new Counter({
    name: 'arbiter_budget_refusals_total',
    help: 'Runs refused before they started (where="start") or stopped before a model call (where="run") because a token, cost or request budget was spent, by budget (tokens_per_day, requests_per_day …) and whose (tenant, agent)',
    labelNames: ['budget', 'whose', 'where'],
    registers: [this.registry],
  });
  readonly budgetThresholdCrossings = new Counter({
    name: 'arbiter_budget_threshold_crossings_total',
    help: 'Budgets whose spend crossed ARBITER_BUDGET_WARN_PERCENT, once per budget and period over every replica, by tenant id, agent ("" for the tenant\'s own budget) and budget',
    labelNames: ['tenant', 'agent', 'budget'],
    registers: [this.registry],
  });
  readonly budgetUsedRatio = new Gauge({
    name: 'arbiter_budget_used_ratio',
    help: 'Share of a budget spent in its current period (1 = spent), as of the last call accounted or message taken here, by tenant id, agent ("" for the tenant\'s own budget) and budget',
    labelNames: ['tenant', 'agent', 'budget'],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({
      register: this.registry,
      prefix: 'arbiter_',
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
  }

  agent(id: string): string {
    return this.agents.of(id);
  }

  model(id: string): string {
    return this.models.of(id);
  }

  tenant(id: string): string {
    return this.tenants.of(id);
  }

  tool(name: string): string {
    return this.tools.of(name);
  }

  /** Adds a gauge reading done at scrape time. */
  onCollect(gauge: Gauge, read: (g: Gauge) => void): void {
    const g = gauge as Gauge & { collect?: () => void };
    const previous = g.collect;
    g.collect = function (this: Gauge) {
      previous?.call(this);
      read(this);
    };
  }
}
