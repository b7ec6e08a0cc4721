import { AgentCard } from '@a2a-js/sdk';
import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { AppConfig } from '../../config/app-config.js';
import { descriptiveSkills, mcpServerGrants, toolGrants, type Constitution } from '../../registry/constitution.js';
import { TenantMcpServers } from '../../mcp/tenant-mcp-servers.service.js';
import { MASTER, type ResolvedAgent } from '../../registry/services/agents.js';
import { routeModel } from '../../config/model-routes.js';
import { KNOWN_TOOLS, TOOL_DESCRIPTIONS, TOOL_SKILL_IDS, isKnownTool, type ToolName } from '../../registry/tools.js';
import { INPUT_MODES, OUTPUT_MODES } from '../../a2a-wire/dialects/message-input.js';
import { IssuerDirectory } from '../../tenants/identity/issuer-directory.service.js';
import { GrpcEndpoint } from '../grpc/grpc-endpoint.js';
import { wellFormedHost } from '../../common/net/host-header.js';
import type { UpstreamProfile } from './upstream-card.js';

type Json = Record<string, unknown>;

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

/** The extension of the extended card that carries the agent's profile. */
export const AGENT_PROFILE_EXTENSION = 'urn:arbiter:agent-profile:v1';

function chatSkill(agent: ResolvedAgent): Json {
  const c = agent.constitution;
  return { id: 'chat', name: 'chat', description: `Talk to ${c.name}: ${describe(c, agent.id)}`, tags: ['chat'] };
}

function descriptive(c: Constitution): Json[] {
  return descriptiveSkills(c).map((skill) => ({ id: slug(skill), name: skill, description: skill, tags: ['skill'] }));
}

/** The public card: chat, the tools granted by name (or usable without grants: see `usableTools`), the descriptive skills. */
function publicSkills(agent: ResolvedAgent, usable: string[]): Json[] {
  const c = agent.constitution;
  const tools = usable.map((tool) => {
    const servers = tool === '/mcp' ? mcpServerGrants(c) : null;
    return {
      id: TOOL_SKILL_IDS[tool as ToolName] ?? slug(tool),
      name: tool,
      description:
        tool === '/search'
          ? 'Can search the web (/search)'
          : tool === '/mcp'
            ? `Can use tools of MCP servers (/mcp)${servers ? `: ${servers.join(', ')}` : ''}`
            : `Can use the ${tool} tool`,
      tags: ['tool'],
    };
  });
  return [chatSkill(agent), ...tools, ...descriptive(c)];
}

/** The extended card: chat, every tool it may use with what the tool does, the descriptive skills. */
function extendedSkills(agent: ResolvedAgent, effective: ToolName[]): Json[] {
  const tools = effective.map((tool) => ({
    id: TOOL_SKILL_IDS[tool],
    name: tool,
    description: TOOL_DESCRIPTIONS[tool],
    tags: ['tool'],
  }));
  return [chatSkill(agent), ...tools, ...descriptive(agent.constitution)];
}

/**
 * A model id's family: the provider and the first word of the model name
 * (`anthropic/claude-sonnet-4-5` → `anthropic/claude`, `gpt-4o` →
 * `openai/gpt`), never a full model id or anything of the provider's setup.
 */
export function modelFamily(id: string): string | undefined {
  const route = routeModel(id);
  if (!route) return undefined;
  if (route.kind === 'echo') return 'echo';
  const first = /^[A-Za-z]+\d*/.exec(route.model.split(/[-_:/.@+]/)[0] ?? '')?.[0];
  return first ? `${route.provider}/${first.toLowerCase()}` : route.provider;
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
    private readonly mcpServers: TenantMcpServers,
    private readonly grpc: GrpcEndpoint,
    private readonly issuers: IssuerDirectory,
  ) {}

  /**
   * The tools a public card lists: the agent's grants; an agent without
   * grants may use every tool, and its card lists `/mcp` when the tenant sees
   * an MCP server (the operator's shared with it, or its own) and `/search`
   * when the operator configured a search provider.
   */
  private async usableTools(c: Constitution, tenantId: string): Promise<string[]> {
    const grants = toolGrants(c);
    if (grants.length > 0) return grants;
    const mcp = await this.mcpServers.seesAny(tenantId);
    return [...(mcp ? ['/mcp'] : []), ...(this.config.activeSearchProvider ? ['/search'] : [])];
  }

  /** The tools the agent may use: its grants, or every tool when it names none (those configured, for /mcp and /search). */
  private async effectiveTools(c: Constitution, tenantId: string): Promise<ToolName[]> {
    const grants = toolGrants(c).filter(isKnownTool);
    if (grants.length) return grants;
    const usable = new Set(await this.usableTools(c, tenantId));
    return KNOWN_TOOLS.filter((t) => (t !== '/mcp' && t !== '/search') || usable.has(t));
  }

  /** Public base URL: configured, else the request's scheme (`req.protocol`, as Express reads it) and a well-formed Host. */
  baseUrl(req: { protocol: string; headers: IncomingHttpHeaders }): string {
    if (this.config.publicBaseUrl) return this.config.publicBaseUrl.replace(/\/+$/, '');
    const host = req.headers.host;
    const safeHost = wellFormedHost(host) ? host : `${this.config.bind}:${this.config.port}`;
    return `${req.protocol}://${safeHost}`;
  }

  /** Whether the public base URL is configured (`ARBITER_PUBLIC_BASE_URL`), not read from each request. */
  get configuredBase(): boolean {
    return Boolean(this.config.publicBaseUrl);
  }

  /** The base URL when there is no request to read it from: configured, else the listening address. */
  configuredBaseUrl(): string {
    return (this.config.publicBaseUrl ?? `http://${this.config.bind}:${this.config.port}`).replace(/\/+$/, '');
  }

  endpointUrl(base: string, agentId: string): string {
    return `${base}/v1/a2a/agents/${encodeURIComponent(agentId)}`;
  }

  /**
   * The v1.0 card, ProtoJSON through the SDK's generated codec. `base` is
   * the public base URL (`baseUrl(req)`). The bindings are listed (§5.2):
   * JSON-RPC (1.0 and the v0.3 dialect) and HTTP+JSON (1.0) at the same URL,
   * and, when `ARBITER_GRPC_PORT` is set, gRPC (1.0) at `host:port`. Every
   * 1.0 interface carries the agent's id as its `tenant` (§8.3.2: clients
   * send it in every request's `tenant` field, and the SDK's REST client as
   * a `/{tenant}/…` path prefix): agents are what a tenant routes to here —
   * that is how a gRPC call, which has no URL, names its agent, and on the
   * HTTP bindings it must be the URL's agent (`A2aCall`).
   */
  async v1Card(agent: ResolvedAgent, base: string, tenantId: string, upstream?: UpstreamProfile): Promise<Json> {
    const skills = upstream?.skills ?? publicSkills(agent, await this.usableTools(agent.constitution, tenantId));
    return AgentCard.toJSON(AgentCard.fromJSON(this.v1Json(agent, base, tenantId, skills, upstream))) as Json;
  }

  /** The v1.0 card plus v0.3's `url`, `protocolVersion`, `preferredTransport` and security shapes. */
  async compatCard(agent: ResolvedAgent, base: string, tenantId: string, upstream?: UpstreamProfile): Promise<Json> {
    return this.withV03Fields(await this.v1Card(agent, base, tenantId, upstream), agent, base, tenantId);
  }

  /**
   * §3.1.11, §13.3: the authenticated extended card — the public card plus
   * every tool the agent may use as a skill (with what it does and how it is
   * called), and an `urn:arbiter:agent-profile:v1` extension carrying the
   * agent's role, goal, rules and tools, and its model family when the
   * operator allows (`ARBITER_EXTENDED_CARD_MODEL`). No secrets: nothing here
   * is more than the tenant can read with `GET /v1/agents/:id`, and less
   * (no personality, no token budget, never a provider key or base URL).
   */
  async v1ExtendedCard(agent: ResolvedAgent, base: string, tenantId: string, up?: UpstreamProfile): Promise<Json> {
    // A remote-backed agent (gateway mode) has no tools or profile of its own: its upstream's card, as the public one.
    if (agent.constitution.backend) return this.v1Card(agent, base, tenantId, up);
    const c = agent.constitution;
    const tools = await this.effectiveTools(c, tenantId);
    const json = this.v1Json(agent, base, tenantId, extendedSkills(agent, tools));
    const profile: Json = {
      role: c.role,
      goal: c.goal,
      rules: c.rules,
      tools,
      mode: c.mode,
    };
    const family = this.config.extendedCardModel ? modelFamily(c.model ?? this.config.defaultModel) : undefined;
    if (family) profile.modelFamily = family;
    (json.capabilities as Json).extensions = [
      {
        uri: AGENT_PROFILE_EXTENSION,
        description: "The agent's profile: role, goal, rules and the tools it may use",
        required: false,
        params: profile,
      },
    ];
    return AgentCard.toJSON(AgentCard.fromJSON(json)) as Json;
  }

  /** The extended card as a v0.3 client reads it (`agent/getAuthenticatedExtendedCard`). */
  async compatExtendedCard(agent: ResolvedAgent, base: string, tenantId: string, up?: UpstreamProfile): Promise<Json> {
    return this.withV03Fields(await this.v1ExtendedCard(agent, base, tenantId, up), agent, base, tenantId);
  }

  /**
   * How a caller may authenticate (§4.5): an HTTP bearer (an opaque tenant
   * token, or a JWT of a trusted issuer), and for each trusted issuer that
   * applies to the tenant — bound to it, or mapping tenants by a claim — an
   * `openIdConnect` scheme with its discovery URL and the scopes A2A calls
   * need. Each requirement is an alternative.
   */
  private security(tenantId: string | null): { schemes: Json; requirements: { name: string; scopes: string[] }[] } {
    const schemes: Json = {};
    const requirements = [{ name: 'bearer', scopes: [] as string[] }];
    // No tenant (the public card): the bearer alone, naming no issuer.
    for (const issuer of tenantId === null ? [] : this.issuers.all()) {
      if (issuer.tenantId !== tenantId && !issuer.tenantClaim) continue;
      const name = `oidc-${issuer.id.slice(0, 8)}`;
      schemes[name] = {
        openIdConnectUrl: `${issuer.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`,
        description: `Access tokens of ${issuer.issuer} (audience ${issuer.audiences.join(' or ')}); scopes: a2a:invoke to call; any of a2a:invoke, agents:read, agents:write or tasks:read to read this card`,
      };
      requirements.push({ name, scopes: ['a2a:invoke'] });
    }
    return { schemes, requirements };
  }

  private v1Json(
    agent: ResolvedAgent,
    base: string,
    tenantId: string | null,
    skills: Json[],
    up?: UpstreamProfile,
  ): Json {
    const security = this.security(tenantId);
    const c = agent.constitution;
    const url = this.endpointUrl(base, agent.id);
    const grpc = this.grpc.address(base);
    return {
      name: up?.name || c.name || agent.id,
      description: up?.description || describe(c, agent.id),
      supportedInterfaces: [
        { url, protocolBinding: 'JSONRPC', tenant: agent.id, protocolVersion: '1.0' },
        // v0.3 has no tenant: its requests carry none, and its AgentInterface no field for one.
        { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
        { url, protocolBinding: 'HTTP+JSON', tenant: agent.id, protocolVersion: '1.0' },
        ...(grpc ? [{ url: grpc, protocolBinding: 'GRPC', tenant: agent.id, protocolVersion: '1.0' }] : []),
      ],
      provider: { organization: 'Arbiter', url: base },
      version: agent.source === 'builtin' ? 'index' : (agent.updatedAt?.toISOString() ?? '1'),
      capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: true },
      securitySchemes: {
        bearer: {
          httpAuthSecurityScheme: {
            scheme: 'Bearer',
            description:
              'A tenant token (atr_…) issued by the Arbiter operator, or a JWT access token of a trusted issuer',
          },
        },
        ...Object.fromEntries(
          Object.entries(security.schemes).map(([name, s]) => [name, { openIdConnectSecurityScheme: s }]),
        ),
      },
      securityRequirements: security.requirements.map((r) => ({ schemes: { [r.name]: { list: r.scopes } } })),
      defaultInputModes: up?.defaultInputModes.length ? up.defaultInputModes : INPUT_MODES,
      defaultOutputModes: up?.defaultOutputModes.length ? up.defaultOutputModes : OUTPUT_MODES,
      skills,
    };
  }

  /**
   * v0.3's top-level fields (spec v0.3 §5.5, §5.6). Only JSON-RPC is declared
   * for v0.3: the HTTP+JSON binding serves the v1.0 URL patterns, not v0.3's
   * `/v1/message:send` proto-JSON ones (see NOTES-rest.md).
   */
  private withV03Fields(v1: Json, agent: ResolvedAgent, base: string, tenantId: string | null): Json {
    const url = this.endpointUrl(base, agent.id);
    const security = this.security(tenantId);
    return {
      ...v1,
      protocolVersion: '0.3.0',
      url,
      preferredTransport: 'JSONRPC',
      additionalInterfaces: [{ url, transport: 'JSONRPC' }],
      capabilities: {
        ...(v1.capabilities as Json),
        streaming: true,
        pushNotifications: true,
        stateTransitionHistory: false,
        extendedAgentCard: true,
      },
      supportsAuthenticatedExtendedCard: true,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A tenant token, or a JWT of a trusted issuer' },
        ...Object.fromEntries(
          Object.entries(security.schemes).map(([name, s]) => [name, { type: 'openIdConnect', ...(s as Json) }]),
        ),
      },
      security: security.requirements.map((r) => ({ [r.name]: r.scopes })),
    };
  }

  /**
   * The public card at `/.well-known/agent-card.json`: the master agent `index`, which every tenant has at the
   * same URL (the tenant is the caller's token's), so a client that starts from the server's origin reaches an
   * agent that delegates to the tenant's own. It lists none of them, nor any issuer: it is read without a token.
   * `version` as for an agent's card: 1.0 when asked for, else the card with v0.3's fields too.
   */
  wellKnown(base: string, version: '1.0' | 'compat'): Json {
    const v1 = this.v1Json(MASTER, base, null, [chatSkill(MASTER)]);
    v1.name = 'Arbiter';
    v1.description =
      `A multi-tenant A2A gateway. Calls to this card's interfaces, with your tenant's bearer token ` +
      `(Authorization: Bearer atr_…, or a JWT of an issuer the operator trusts), reach your tenant's master ` +
      `agent 'index', which answers or delegates to your tenant's agents. Each agent's own card is at ` +
      `${base}/v1/a2a/agents/<agent id>/agent-card.json, with the same token.`;
    const card = AgentCard.toJSON(AgentCard.fromJSON(v1)) as Json;
    return version === '1.0' ? card : this.withV03Fields(card, MASTER, base, null);
  }
}
