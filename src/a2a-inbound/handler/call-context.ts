import type { TenantPrincipal } from '../../common/auth.decorators.js';
import type { ResolvedAgent } from '../../registry/services/agents.js';
import type { StreamItem } from '../../a2a-wire/dialects/dialect.js';

/** Who calls, on which agent; `signal` aborts when the client goes away (it stops streams, never the task). */
export interface CallContext {
  principal: TenantPrincipal;
  agent: ResolvedAgent;
  signal: AbortSignal;
  /** The public base URL the request came in on (`AgentCardService.baseUrl`), for cards; else the configured one. */
  baseUrl?: string;
}

/** A stream's task and its items (the task first, then events from its log). */
export interface A2aStream {
  task: { id: string; contextId: string };
  items: AsyncIterable<StreamItem>;
  /** Frees the tenant's stream slot: the binding calls it when the response closes. */
  release: () => void;
}
