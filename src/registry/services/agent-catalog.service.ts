import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config.js';
import { ReplicaCache } from '../../database/replica-cache.js';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { CURSOR_FIELDS, decodeCursor, encodeCursor } from '../../common/cursor.js';
import { DomainError, type FieldError } from '../../common/errors.js';
import { DEFAULT_PAGE_SIZE, type Page } from '../../common/pagination.dto.js';
import { AuditLog } from '../../tenants/services/audit-log.service.js';
import { AGENT_ID_PATTERN, applyConstitution, descriptiveSkills, MASTER_AGENT_ID } from '../constitution.js';
import type { AgentEntity } from '../entities/agent.entity.js';
import { AgentRepository, DuplicateAgentError, type AlongWith } from '../repositories/agent.repository.js';
import {
  agentView,
  fromFile,
  fromRow,
  idErrors,
  INLINE_AGENT_ID,
  MASTER,
  splitBody,
  validateDef,
  type AgentView,
  type ResolvedAgent,
} from './agents.js';
import { loadFileAgents, type FileAgent } from './file-agents.loader.js';
import { TenantRemotes } from '../../a2a-outbound/tenant-remotes.service.js';
import type { Constitution } from '../constitution.js';
import type { AgentBackend } from '../backend.js';

/**
 * Who changes a stored agent: the credential's actor id, an opaque token's
 * id and prefix (named in the audit row's detail too), and the request.
 */
export interface AgentActor {
  actor: string;
  token?: { id: string; prefix: string };
  requestId?: string;
}

/** The replica channel of stored-agent changes: `<tenant id>|<agent id>`. */
const AGENTS_CHANNEL = 'arbiter_agents';
/** How long a stored agent is served from memory at most (changes drop it at once). */
const AGENT_TTL_MS = 60_000;

/**
 * The tenant's catalog: the built-in `index` master, operator-provided
 * file agents (`ARBITER_HOME/agents/*.json`, shared by every tenant,
 * read-only) and the tenant's stored agents.
 */
@Injectable()
export class AgentCatalog implements OnModuleInit {
  private readonly logger = new Logger('AgentCatalog');
  private fileAgents = new Map<string, FileAgent>();

  /** Stored agents (and known absences) by `tenant|id`; every change drops the entry on every replica. */
  private readonly stored: ReplicaCache<{ row: AgentEntity | null }>;

  constructor(
    private readonly config: AppConfig,
    private readonly agents: AgentRepository,
    private readonly channel: ReplicaChannel,
    @InjectDataSource() private readonly ds: DataSource,
    private readonly audit: AuditLog,
    private readonly remotes: TenantRemotes,
  ) {
    this.stored = new ReplicaCache(channel, AGENT_TTL_MS);
  }

  onModuleInit(): void {
    this.reloadFileAgents();
    this.channel.listenApplied(AGENTS_CHANNEL, (key) => this.stored.delete(key));
  }

  /** The audit row of an agent change, committed with the change itself (nothing when no actor is named). */
  private audited(
    action: 'agent.create' | 'agent.update' | 'agent.delete',
    tenantId: string,
    agentId: string,
    actor: AgentActor | undefined,
    detail: Record<string, unknown> = {},
  ): AlongWith | undefined {
    if (!actor) return undefined;
    return (em) =>
      this.audit.record(em, {
        actor: 'tenant',
        action,
        tenantId,
        detail: {
          agent_id: agentId,
          ...(actor.token ? { token_id: actor.token.id, token_prefix: actor.token.prefix } : {}),
          ...detail,
        },
        by: { actor: actor.actor, requestId: actor.requestId },
      });
  }

  /** A stored agent changed: drop it here and on every replica before the change is answered. */
  private async changed(tenantId: string, id: string): Promise<void> {
    const key = `${tenantId}|${id}`;
    this.stored.delete(key);
    if (!this.channel.enabled) return;
    const echo = this.channel.appliedEverywhere(AGENTS_CHANNEL, key);
    await this.ds.query(`SELECT pg_notify($1, $2)`, [AGENTS_CHANNEL, key]);
    await echo.done;
  }

  /** The stored row (null: none), at once when it is in memory. */
  private storedRow(tenantId: string, id: string): AgentEntity | null | Promise<AgentEntity | null> {
    const key = `${tenantId}|${id}`;
    const known = this.stored.get(key);
    if (known) return known.row;
    const generation = this.stored.begin();
    return this.agents.find(tenantId, id).then((row) => {
      this.stored.set(key, { row }, generation);
      return row;
    });
  }

  /** (Re)reads the agents directory; bad files are logged by name and skipped. */
  reloadFileAgents(): void {
    const { agents, problems } = loadFileAgents(this.config.agentsDir);
    for (const p of problems) this.logger.error(`skipped agent file ${p.file}: ${p.problem}`);
    this.fileAgents = new Map(agents.map((a) => [a.id, a]));
    if (agents.length) this.logger.log(`loaded ${agents.length} file-backed agent(s) from ${this.config.agentsDir}`);
  }

  /**
   * The agent with this id for the tenant, or null (another tenant's agent is null too): at once (no promise) when
   * it is the built-in agent or its row is in memory, as it is for most requests.
   */
  resolve(tenantId: string, id: string): ResolvedAgent | null | Promise<ResolvedAgent | null> {
    if (id === MASTER_AGENT_ID) return MASTER;
    if (!AGENT_ID_PATTERN.test(id)) return null;
    const row = this.storedRow(tenantId, id);
    return row instanceof Promise ? row.then((r) => this.agentOf(r, id)) : this.agentOf(row, id);
  }

  /** A stored agent, else the agents directory's one of that id. */
  private agentOf(row: AgentEntity | null, id: string): ResolvedAgent | null {
    if (row) return fromRow(row);
    const file = this.fileAgents.get(id);
    return file ? fromFile(file) : null;
  }

  /** An unregistered agent defined in a request (`agent_def`), validated like a stored one. */
  async inline(def: unknown): Promise<ResolvedAgent> {
    if (def === null || typeof def !== 'object' || Array.isArray(def)) {
      throw DomainError.validation([{ field: 'agent_def', messages: ['agent_def must be a JSON object'] }]);
    }
    const dto = await validateDef(def, 'agent_def', []);
    return {
      id: INLINE_AGENT_ID,
      source: 'inline',
      constitution: applyConstitution('inline', {}, dto),
      createdAt: null,
      updatedAt: null,
    };
  }

  async get(tenantId: string, id: string): Promise<AgentView> {
    const agent = await this.resolve(tenantId, this.checkId(id));
    if (!agent) throw DomainError.notFound(`agent '${id}'`);
    return agentView(agent);
  }

  /** `index` first, then file and stored agents in id order; keyset cursor on id. */
  async list(tenantId: string, limit = DEFAULT_PAGE_SIZE, cursor?: string): Promise<Page<AgentView>> {
    const after = decodeCursor(cursor, ['after'] as const, { after: CURSOR_FIELDS.agentIdOrEmpty })?.after;
    const items: ResolvedAgent[] = [];
    if (after === undefined) items.push(MASTER);
    const want = limit - items.length;
    const afterId = after ?? '';
    // One row more than the page needs tells whether another page follows.
    const rows = await this.agents.list(tenantId, want + 1, afterId);
    const merged = new Map<string, ResolvedAgent>();
    for (const f of this.fileAgents.values()) if (f.id > afterId) merged.set(f.id, fromFile(f));
    for (const r of rows) merged.set(r.id, fromRow(r)); // a tenant's own agent shadows a file agent
    const candidates = [...merged.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    items.push(...candidates.slice(0, want));
    const more = candidates.length > want;
    const last = items[items.length - 1];
    const nextAfter = last?.id === MASTER_AGENT_ID && after === undefined ? '' : last?.id;
    return {
      items: items.map(agentView),
      next_cursor: more && nextAfter !== undefined ? encodeCursor({ after: nextAfter }) : null,
    };
  }

  async create(tenantId: string, body: unknown, actor?: AgentActor): Promise<AgentView> {
    const { id, def, prefix } = splitBody(body);
    const dto = await validateDef(def ?? {}, prefix, idErrors(id));
    const agentId = id as string;
    if (agentId === MASTER_AGENT_ID) {
      throw new DomainError('conflict', `agent id 'index' is reserved for the built-in master agent`);
    }
    if (this.fileAgents.has(agentId)) {
      throw new DomainError('conflict', `agent '${agentId}' already exists (file-backed)`);
    }
    const constitution = applyConstitution(agentId, {}, dto);
    await this.checkBackend(tenantId, constitution, prefix);
    try {
      const row = await this.agents.insert(
        tenantId,
        agentId,
        constitution,
        // A remote-backed agent's audit row names the registry entry it is put in front of.
        this.audited('agent.create', tenantId, agentId, actor, backendDetail(constitution.backend)),
      );
      await this.changed(tenantId, agentId);
      return agentView(fromRow(row));
    } catch (err) {
      if (err instanceof DuplicateAgentError) throw new DomainError('conflict', `agent '${agentId}' already exists`);
      throw err;
    }
  }

  /** Partial update: fields present replace the stored ones, `null` resets one to its default. */
  async update(tenantId: string, id: string, body: unknown, actor?: AgentActor): Promise<AgentView> {
    this.checkId(id);
    const { id: bodyId, def, prefix } = splitBody(body);
    const errors: FieldError[] =
      bodyId !== undefined && bodyId !== id ? [{ field: 'id', messages: ['id cannot be changed'] }] : [];
    const dto = await validateDef(def ?? {}, prefix, errors);
    const existing = await this.resolve(tenantId, id);
    if (!existing) throw DomainError.notFound(`agent '${id}'`);
    if (existing.source !== 'stored') throw this.readOnly(existing);
    const fields = Object.keys(def ?? {}).sort();
    const stored = (await this.agents.find(tenantId, id))?.constitution;
    if (stored) await this.checkBackend(tenantId, applyConstitution(id, stored, dto), prefix);
    const row = await this.agents.update(
      tenantId,
      id,
      (current) => applyConstitution(id, current, dto),
      this.audited('agent.update', tenantId, id, actor, { fields }),
    );
    await this.changed(tenantId, id);
    if (!row) throw DomainError.notFound(`agent '${id}'`);
    return agentView(fromRow(row));
  }

  async delete(tenantId: string, id: string, actor?: AgentActor): Promise<void> {
    const existing = await this.resolve(tenantId, this.checkId(id));
    if (!existing) throw DomainError.notFound(`agent '${id}'`);
    if (existing.source !== 'stored') throw this.readOnly(existing);
    const deleted = await this.agents.delete(tenantId, id, this.audited('agent.delete', tenantId, id, actor));
    await this.changed(tenantId, id);
    if (!deleted) throw DomainError.notFound(`agent '${id}'`);
  }

  /** The `AGENTS` block of the master agent's system prompt. */
  async roster(tenantId: string): Promise<string> {
    const lines: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.list(tenantId, 200, cursor);
      for (const a of page.items) {
        if (a.id === MASTER_AGENT_ID) continue;
        const c = a.agent_def;
        const skills = descriptiveSkills(c);
        const role = c.role ? ` [${c.role}]` : '';
        const goal = c.goal ? ` — ${c.goal.replace(/\s+/g, ' ').slice(0, 160)}` : '';
        lines.push(
          `  ${a.id}${role} ${c.backend ? `remote:${c.backend.remote}` : (c.model ?? 'default')}${goal}` +
            (skills.length ? ` (skills: ${skills.join(', ')})` : ''),
        );
      }
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    return lines.length ? `AGENTS — delegate with /agent <id> <task>:\n${lines.join('\n')}` : '';
  }

  /**
   * A remote-backed agent names a remote the tenant sees (in the registry it names), and no model: a 400 naming
   * the field otherwise.
   */
  private async checkBackend(tenantId: string, c: Constitution, prefix: string): Promise<void> {
    if (!c.backend) return;
    const at = (f: string): string => (prefix ? `${prefix}.${f}` : f);
    if (c.model !== null) {
      throw DomainError.validation([
        { field: at('model'), messages: ['model and backend exclude each other: a remote-backed agent has no model'] },
      ]);
    }
    const { remote, registry } = c.backend;
    if (!(await this.remotes.lookup(tenantId, remote, registry))) {
      const where =
        registry === 'shared'
          ? "the operator's shared registry"
          : registry === 'tenant'
            ? 'your registry (/v1/remote-agents)'
            : 'your registry (/v1/remote-agents) or the shared one';
      throw DomainError.validation([
        { field: at('backend.remote'), messages: [`no remote agent named '${remote}' in ${where}`] },
      ]);
    }
  }

  private readOnly(agent: ResolvedAgent): DomainError {
    return new DomainError(
      'read_only',
      agent.source === 'builtin'
        ? `agent 'index' is the built-in master agent and cannot be changed or deleted`
        : `agent '${agent.id}' is file-backed and read-only through the API`,
    );
  }

  private checkId(id: string): string {
    if (!AGENT_ID_PATTERN.test(id)) {
      throw DomainError.validation([{ field: 'id', messages: ['id must match [A-Za-z0-9_-]{1,64}'] }]);
    }
    return id;
  }
}

/** What an audit row says of an agent's backend: the registry entry (and registry) it is backed by. */
function backendDetail(b: AgentBackend | undefined): Record<string, unknown> {
  return b ? { backend: { remote: b.remote, ...(b.registry ? { registry: b.registry } : {}) } } : {};
}
