import { AgentCard } from '@a2a-js/sdk';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { RemoteAgents } from '../../a2a-outbound/remote-agents.service.js';
import type { ResolvedAgent } from '../../registry/services/agents.js';

type Json = Record<string, unknown>;

/** What a remote-backed agent's card takes from its upstream's: who it is, what it does, what it reads and writes. */
export interface UpstreamProfile {
  name: string;
  description: string;
  skills: Json[];
  defaultInputModes: string[];
  defaultOutputModes: string[];
}

/**
 * A remote-backed agent's upstream card, as its own card shows it: read through the registry entry (its
 * credential, the egress guard, the card's pin when one is set) within `ARBITER_A2A_CARD_TIMEOUT_MS`, and cached
 * with the remote's card. Undefined for a model-backed agent, or when the upstream's card cannot be had now (the
 * card then describes the agent from its constitution, and says so).
 */
@Injectable()
export class UpstreamCards {
  private readonly logger = new Logger('UpstreamCards');

  constructor(
    private readonly config: AppConfig,
    private readonly remotes: RemoteAgents,
  ) {}

  async profile(tenantId: string, agent: ResolvedAgent): Promise<UpstreamProfile | undefined> {
    const backend = agent.constitution.backend;
    if (!backend) return undefined;
    try {
      const cached = await this.remotes.upstream(tenantId, backend, AbortSignal.timeout(this.config.a2aCardTimeoutMs));
      const card = AgentCard.toJSON(cached.card) as Json;
      const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s) => typeof s === 'string') : []);
      return {
        name: typeof card.name === 'string' && card.name ? card.name : agent.constitution.name,
        description: typeof card.description === 'string' ? card.description : '',
        skills: Array.isArray(card.skills) ? (card.skills as Json[]) : [],
        defaultInputModes: list(card.defaultInputModes),
        defaultOutputModes: list(card.defaultOutputModes),
      };
    } catch (err) {
      this.logger.warn({ agentId: agent.id, reason: (err as Error).message }, 'upstream card unavailable');
      return undefined;
    }
  }
}
