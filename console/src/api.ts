import { readSse, type SseFrame } from './sse';

/** An API error in Arbiter's one shape (`{error, code, details?, request_id}`) or the A2A REST `google.rpc.Status`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
    readonly details: { field: string; messages: string[] }[] = [],
  ) {
    super(message);
  }
}

interface ErrorBody {
  error?: string | { message?: string; status?: string };
  code?: string;
  details?: { field: string; messages: string[] }[];
}

async function toError(res: Response): Promise<ApiError> {
  let body: ErrorBody = {};
  try {
    body = (await res.json()) as ErrorBody;
  } catch {
    /* not JSON: the status says enough */
  }
  if (body.error && typeof body.error === 'object') {
    return new ApiError(res.status, body.error.message ?? res.statusText, body.error.status ?? 'error');
  }
  return new ApiError(
    res.status,
    typeof body.error === 'string' ? body.error : `HTTP ${res.status}`,
    body.code ?? 'error',
    Array.isArray(body.details) ? body.details : [],
  );
}

/** Called when a request answers 401 (a revoked or rotated token): the app signs out. */
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

/** What `GET /v1/me` says about a token: the admin, or a tenant (with its name and the token's public prefix). */
export type Me =
  { kind: 'admin' } | { kind: 'tenant'; tenant: { id: string; name: string }; token: { id: string; prefix: string } };

/** Who this token is (`GET /v1/me`, which answers for either kind of token); a clear error for a bad one. */
export async function whoAmI(token: string): Promise<Me> {
  const res = await fetch('/v1/me', {
    headers: new Api(token).headers(),
    credentials: 'omit',
    cache: 'no-store',
  });
  if (res.ok) return (await res.json()) as Me;
  const err = await toError(res);
  if (res.status === 401) throw new ApiError(401, `This token is not valid: ${err.message}.`, 'unauthorized');
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
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

export interface AuditEntry {
  id: string;
  actor: string;
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
