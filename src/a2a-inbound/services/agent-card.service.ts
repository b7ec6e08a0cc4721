import { createHash } from 'node:crypto';
import { AgentCard } from '@a2a-js/sdk';
import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { AppConfig } from '../../config/app-config.js';
import { descriptiveSkills, mcpServerGrants, toolGrants, type Constitution } from '../../registry/constitution.js';
import { McpRegistry } from '../../mcp/mcp-registry.service.js';
import type { ResolvedAgent } from '../../registry/services/agent-catalog.service.js';
import { TOOL_SKILL_IDS, type ToolName } from '../../registry/tools.js';
import { INPUT_MODES, OUTPUT_MODES } from '../dialects/message-input.js';

type Json = Record<string, unknown>;

const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

function slug(s: string): string {
  return (
    s
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 64) || 'skill'
  );
}

function describe(c: Constitution, id: string): string {
  const parts = [c.role, c.goal].filter((x) => x.trim().length > 0);
  return parts.length ? parts.join(' — ') : `Arbiter agent '${id}'`;
}

/**
 * Agent cards derived from constitutions (seed 000's table): a v1.0
 * AgentCard (spec §4.4) and, for clients that send no `A2A-Version`, the
 * same card with the v0.3 top-level fields added so a v0.3 client can read it.
 */
@Injectable()
export class AgentCardService {
  constructor(
    private readonly config: AppConfig,
    private readonly mcp: McpRegistry,
  ) {}

  /** Public base URL: configured, else the request's scheme and a well-formed Host. */
  baseUrl(req: Request): string {
    if (this.config.publicBaseUrl) return this.config.publicBaseUrl.replace(/\/+$/, '');
    const host = req.get('host');
    const safeHost = host && HOST.test(host) ? host : `${this.config.bind}:${this.config.port}`;
    return `${req.protocol}://${safeHost}`;
  }

  endpointUrl(req: Request, agentId: string): string {
    return `${this.baseUrl(req)}/v1/a2a/agents/${encodeURIComponent(agentId)}`;
  }

  /** The v1.0 card, ProtoJSON through the SDK's generated codec. */
  v1Card(agent: ResolvedAgent, req: Request): Json {
    const c = agent.constitution;
    const url = this.endpointUrl(req, agent.id);
    const skills: Json[] = [
      {
        id: 'chat',
        name: 'chat',
        description: `Talk to ${c.name}: ${describe(c, agent.id)}`,
        tags: ['chat'],
      },
    ];
    for (const tool of this.usableTools(c)) {
      const servers = tool === '/mcp' ? mcpServerGrants(c) : null;
      skills.push({
        id: TOOL_SKILL_IDS[tool as ToolName] ?? slug(tool),
        name: tool,
        description:
          tool === '/search'
            ? 'Can search the web (/search)'
            : tool === '/mcp'
              ? `Can use tools of MCP servers (/mcp)${servers ? `: ${servers.join(', ')}` : ''}`
              : `Can use the ${tool} tool`,
        tags: ['tool'],
      });
    }
    for (const skill of descriptiveSkills(c)) {
      skills.push({ id: slug(skill), name: skill, description: skill, tags: ['skill'] });
    }
    const card: Json = {
      name: c.name || agent.id,
      description: describe(c, agent.id),
      supportedInterfaces: [
        { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
      provider: { organization: 'Arbiter', url: this.baseUrl(req) },
      version: agent.source === 'builtin' ? 'index' : (agent.updatedAt?.toISOString() ?? '1'),
      capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
      securitySchemes: {
        bearer: {
          httpAuthSecurityScheme: {
            scheme: 'Bearer',
            description: 'The tenant bearer token issued by the Arbiter operator',
          },
        },
      },
      securityRequirements: [{ schemes: { bearer: { list: [] } } }],
      defaultInputModes: INPUT_MODES,
      defaultOutputModes: OUTPUT_MODES,
      skills,
    };
    return AgentCard.toJSON(AgentCard.fromJSON(card)) as Json;
  }

  /**
   * The tools a card lists: the agent's grants; an agent without grants may
   * use every tool, and its card lists `/mcp` and `/search` when the
   * operator configured MCP servers or a search provider.
   */
  private usableTools(c: Constitution): string[] {
    const grants = toolGrants(c);
    if (grants.length > 0) return grants;
    return [...(this.mcp.list().length > 0 ? ['/mcp'] : []), ...(this.config.activeSearchProvider ? ['/search'] : [])];
  }

  /** The v1.0 card plus v0.3's `url`, `protocolVersion`, `preferredTransport` and security shapes. */
  compatCard(agent: ResolvedAgent, req: Request): Json {
    const v1 = this.v1Card(agent, req);
    const url = this.endpointUrl(req, agent.id);
    return {
      ...v1,
      protocolVersion: '0.3.0',
      url,
      preferredTransport: 'JSONRPC',
      additionalInterfaces: [{ url, transport: 'JSONRPC' }],
      capabilities: {
        streaming: true,
        pushNotifications: false,
        stateTransitionHistory: false,
        extendedAgentCard: false,
      },
      supportsAuthenticatedExtendedCard: false,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'The tenant bearer token' } },
      security: [{ bearer: [] }],
    };
  }

  /** The unauthenticated discovery stub: how to authenticate, where the cards are; no agents. */
  wellKnown(req: Request): Json {
    const base = this.baseUrl(req);
    return {
      name: 'Arbiter',
      description:
        `Multi-tenant A2A gateway. This stub lists no agents. Authenticate with your tenant bearer token ` +
        `(Authorization: Bearer atr_…) and fetch an agent's card at ${base}/v1/a2a/agents/{agentId}/agent-card.json; ` +
        `each agent's JSON-RPC endpoint is ${base}/v1/a2a/agents/{agentId}.`,
      supportedInterfaces: [],
      version: '1',
      capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
      securityRequirements: [{ schemes: { bearer: { list: [] } } }],
      defaultInputModes: INPUT_MODES,
      defaultOutputModes: OUTPUT_MODES,
      skills: [],
      documentationUrl: `${base}/v1/a2a/agents/{agentId}/agent-card.json`,
    };
  }

  static etag(body: string): string {
    return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  }
}
