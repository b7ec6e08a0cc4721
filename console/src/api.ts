import { readSse, type SseFrame } from './sse';

/** An API error in Arbiter's one shape (`{error, code, details?, request_id}`) or the A2A REST `google.rpc.Status`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
    readonly details: { field: string; messages: string[] }[] = [],
    /** A 403 for a missing scope: the scopes any one of which would have allowed the request. */
    readonly requiredScopes: string[] = [],
  ) {
    super(message);
  }
}

interface ErrorBody {
  error?: string | { message?: string; status?: string; details?: { metadata?: { required_scopes?: unknown } }[] };
  code?: string;
  details?: { field: string; messages: string[] }[];
  required_scopes?: unknown;
}

const stringList = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];

/** A2A REST (`google.rpc.Status`): the scopes ride in an `ErrorInfo`'s metadata, space-separated. */
const statusScopes = (details: unknown): string[] => {
  if (!Array.isArray(details)) return [];
  for (const d of details as { metadata?: { required_scopes?: unknown } }[]) {
    const s = d?.metadata?.required_scopes;
    if (typeof s === 'string') return s.split(' ').filter(Boolean);
  }
  return [];
};

async function toError(res: Response): Promise<ApiError> {
  let body: ErrorBody = {};
  try {
    body = (await res.json()) as ErrorBody;
  } catch {
    /* not JSON: the status says enough */
  }
  if (body.error && typeof body.error === 'object') {
    return new ApiError(
      res.status,
      body.error.message ?? res.statusText,
      body.error.status ?? 'error',
      [],
      statusScopes(body.error.details),
    );
  }
  return new ApiError(
    res.status,
    typeof body.error === 'string' ? body.error : `HTTP ${res.status}`,
    body.code ?? 'error',
    Array.isArray(body.details) ? body.details : [],
    stringList(body.required_scopes),
  );
}

/** Called when a request answers 401 (a revoked or rotated token, an expired JWT): the app signs out. */
let onUnauthorized: (message: string) => void = () => undefined;
export function setUnauthorizedHandler(fn: (message: string) => void): void {
  onUnauthorized = fn;
}

export class Api {
  constructor(readonly token: string) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { Authorization: `Bearer ${this.token}`, ...extra };
  }

  /** A same-origin request; the JSON reply, or an `ApiError`. */
  async call<T>(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    extraHeaders: Record<string, string> = {},
  ): Promise<T> {
    const res = await fetch(path, {
      method,
      headers: this.headers({
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...extraHeaders,
      }),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      credentials: 'omit',
      cache: 'no-store',
    });
    if (!res.ok) {
      const err = await toError(res);
      if (res.status === 401) onUnauthorized(err.message);
      throw err;
    }
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.call<T>('GET', path, undefined, signal);
  }

  /**
   * Opens an SSE response (GET or POST) and hands each frame to `onFrame` until the stream ends; `onOpen` once the
   * server has answered with the stream (before any frame: a live stream may be quiet for a long time).
   */
  async stream(
    path: string,
    init: {
      method?: string;
      body?: unknown;
      headers?: Record<string, string>;
      signal?: AbortSignal;
      onOpen?: () => void;
    },
    onFrame: (f: SseFrame) => void,
  ): Promise<void> {
    const res = await fetch(path, {
      method: init.method ?? 'GET',
      headers: this.headers({
        Accept: 'text/event-stream',
        ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...init.headers,
      }),
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: init.signal,
      credentials: 'omit',
      cache: 'no-store',
    });
    if (!res.ok || !res.body) {
      const err = await toError(res);
      if (res.status === 401) onUnauthorized(err.message);
      throw err;
    }
    init.onOpen?.();
    await readSse(res.body, onFrame);
  }
}

/** What a tenant credential may do (`GET /v1/me`'s `scopes`). */
export const SCOPES = ['a2a:invoke', 'agents:read', 'agents:write', 'tasks:read'] as const;
export type Scope = (typeof SCOPES)[number];

/** The credential behind a session: an opaque token, or a JWT of a trusted issuer (which expires). */
export type Credential =
  | { kind: 'token'; id: string; prefix: string }
  | { kind: 'admin_token'; id: string | null }
  | { kind: 'jwt'; issuer_id: string; expires_at: string };

/**
 * What `GET /v1/me` says about a credential: an operator (`admin`, or `auditor`, who may only read), or a tenant
 * (its name and the scopes the credential carries); either way the actor its actions are audited under.
 */
export type Me =
  | { kind: 'admin'; role: 'admin' | 'auditor'; actor: string; credential: Credential }
  | {
      kind: 'tenant';
      tenant: { id: string; name: string };
      scopes: Scope[];
      actor: string;
      credential: Credential;
      token: { id: string; prefix: string };
    };

/** The bearer as pasted: surrounding space and a copied `Bearer ` prefix dropped. */
export const cleanToken = (raw: string): string => raw.trim().replace(/^Bearer\s+/i, '');

/** Who this credential is (`GET /v1/me`, which answers for any kind); a clear error for a bad one. */
export async function whoAmI(token: string): Promise<Me> {
  const res = await fetch('/v1/me', {
    headers: new Api(token).headers(),
    credentials: 'omit',
    cache: 'no-store',
  });
  if (res.ok) return (await res.json()) as Me;
  const err = await toError(res);
  if (res.status === 401 && /expired/i.test(err.message)) {
    throw new ApiError(401, 'This token has expired: get a fresh one from your identity provider.', 'unauthorized');
  }
  if (res.status === 401) throw new ApiError(401, `This token is not valid: ${err.message}.`, 'unauthorized');
  if (res.status === 403) throw new ApiError(403, `This token may not use the console: ${err.message}.`, 'forbidden');
  throw new ApiError(res.status, `The server answered HTTP ${res.status}; try again.`, 'error');
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface Constitution {
  name?: string;
  role?: string;
  personality?: string;
  goal?: string;
  model?: string | null;
  max_tokens?: number;
  temperature?: number;
  brevity?: string;
  mode?: string;
  rules?: string[];
  capabilities?: string[];
  /** Gateway mode: backed by a remote A2A agent instead of a model. */
  backend?: AgentBackend | null;
}

export interface AgentBackend {
  remote: string;
  registry?: 'tenant' | 'shared';
  timeouts?: { first_event_ms?: number; idle_ms?: number; total_ms?: number };
}

export interface Agent {
  id: string;
  source: 'builtin' | 'file' | 'stored';
  agent_def: Constitution;
  created_at: string | null;
  updated_at: string | null;
}

/** A message of a task's history (A2A v1.0 ProtoJSON, the parts the console reads). */
export interface HistoryMessage {
  role?: string;
  parts?: { text?: string }[];
}

export interface RequestView {
  id: string;
  agent_id: string;
  context_id: string;
  state: string;
  created_at: string;
  updated_at: string;
  reply: string | null;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
  last_seq: number;
  history?: HistoryMessage[];
}

export interface Tenant {
  id: string;
  name: string;
  disabled: boolean;
  disabled_at: string | null;
  created_at: string;
}

export interface TokenInfo {
  id: string;
  prefix: string;
  scopes?: string[];
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

export interface AuditEntry {
  id: string;
  actor: string;
  /** Who exactly: `root`, `operator:<name>`, `token:<prefix>`, `jwt:<iss>|<sub>` (absent on older entries). */
  actor_id?: string | null;
  action: string;
  tenant_id: string | null;
  detail: Record<string, unknown>;
  request_id: string | null;
  created_at: string;
}

export const TASK_STATES = [
  'submitted',
  'working',
  'input-required',
  'auth-required',
  'completed',
  'failed',
  'canceled',
  'rejected',
] as const;

export const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);

export const q = (params: Record<string, string | number | undefined | null>): string => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') s.set(k, String(v));
  const out = s.toString();
  return out ? `?${out}` : '';
};

export interface Latency {
  p50: number | null;
  p95: number | null;
}

export interface ErrorCount {
  binding: string;
  code: string;
  count: number;
}

export interface TaskCounts {
  started: number;
  completed: number;
  failed: number;
  canceled: number;
  input_required: number;
}

/** `GET /v1/stats` (and `/v1/admin/stats`): the overview's figures over a window. */
export interface Stats {
  window: string;
  from: string;
  to: string;
  interval_seconds: number;
  tenant_id: string | null;
  intervals: (TaskCounts & { start: string; first_event: Latency; duration: Latency; a2a_errors: ErrorCount[] })[];
  totals: TaskCounts & { first_event: Latency; duration: Latency; a2a_errors: number };
  a2a_errors: ErrorCount[];
  usage: {
    from: string;
    to: string;
    currency: string | null;
    by_agent: UsageSlice[];
    by_model: UsageSlice[];
  };
  /** Budget use: one tenant's as `GET /v1/budgets` answers it, or every tenant's with a budget (`tenants`). */
  budgets: Budgets | AllBudgets;
}

export interface UsageSlice {
  key: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
}

export interface UsageSums {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  unpriced_calls: number;
  cost: { amount: number; currency: string | null };
}

/** `GET /v1/usage`: totals, and a row per group. */
export interface UsageReport {
  from: string;
  to: string;
  group_by: string[];
  totals: UsageSums;
  rows: (UsageSums & Record<string, unknown>)[];
}

export const BUDGET_KEYS = [
  'tokens_per_day',
  'tokens_per_month',
  'cost_per_day',
  'cost_per_month',
  'requests_per_day',
  'requests_per_month',
] as const;
export type BudgetKey = (typeof BUDGET_KEYS)[number];
export type BudgetLimits = Record<BudgetKey, number | null>;

export interface BudgetUse {
  tokens: number;
  cost: number;
  requests: number;
  from: string;
  resets_at: string;
}

export interface Budget {
  limits: BudgetLimits;
  used: { day: BudgetUse; month: BudgetUse };
}

/** `GET /v1/budgets` (and `/v1/admin/budgets?tenant=`): the tenant's budget and each agent's. */
export interface Budgets {
  currency: string | null;
  warn_at_percent: number;
  tenant_id?: string;
  tenant: Budget;
  agents: (Budget & { agent: string })[];
}

/** `GET /v1/admin/budgets` (no `tenant`): every tenant with a budget of its own or of an agent. */
export interface AllBudgets {
  currency: string | null;
  warn_at_percent: number;
  tenants: { tenant_id: string; tenant_name: string; tenant: Budget; agents: (Budget & { agent: string })[] }[];
}
