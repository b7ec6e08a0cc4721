import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, Repository } from 'typeorm';
import { CURSOR_FIELDS, decodeCursor, encodeCursor } from '../../common/cursor.js';
import { DomainError } from '../../common/errors.js';
import { uuid7 } from '../../common/ids.js';
import { DEFAULT_PAGE_SIZE, type Page } from '../../common/pagination.dto.js';
import { ConversationEntity } from '../entities/conversation.entity.js';
import { MASTER_AGENT_ID } from '../../registry/constitution.js';
import { AgentCatalog } from '../../registry/services/agent-catalog.service.js';
import { type ResolvedAgent } from '../../registry/services/agents.js';
import { TaskError } from '../../tasks/task.errors.js';
import { messageText, TaskService } from '../../tasks/task.service.js';
import { isTerminal } from '../../tasks/task-state.js';

export interface ConversationView {
  id: string;
  agent_id: string;
  title: string;
  created_at: string;
  updated_at: string;
}

export interface ConversationMessage {
  role: 'user' | 'assistant';
  content: string;
  request_id: string;
  at: string;
}

const view = (c: ConversationEntity): ConversationView => ({
  id: c.id,
  agent_id: c.agentId,
  title: c.title,
  created_at: c.createdAt.toISOString(),
  updated_at: c.updatedAt.toISOString(),
});

/**
 * Conversations: a thread with one agent. The id doubles as the context id
 * of its turns, so the messages are the tasks' own history (no second copy)
 * and an A2A client sending that contextId continues the same thread.
 */
@Injectable()
export class ConversationService {
  private readonly repo: Repository<ConversationEntity>;

  constructor(
    @InjectDataSource() ds: DataSource,
    private readonly catalog: AgentCatalog,
    private readonly tasks: TaskService,
  ) {
    this.repo = ds.getRepository(ConversationEntity);
  }

  async create(tenantId: string, agentId = MASTER_AGENT_ID, title = ''): Promise<ConversationView> {
    if (!(await this.catalog.resolve(tenantId, agentId))) throw DomainError.notFound(`agent '${agentId}'`);
    const now = new Date();
    const row = await this.repo.save(
      this.repo.create({ id: uuid7(), tenantId, agentId, title, createdAt: now, updatedAt: now }),
    );
    return view(row);
  }

  async list(tenantId: string, limit = DEFAULT_PAGE_SIZE, cursor?: string): Promise<Page<ConversationView>> {
    const c = decodeCursor(cursor, ['u', 'i'] as const, { u: CURSOR_FIELDS.timestamp, i: CURSOR_FIELDS.uuid });
    const qb = this.repo.createQueryBuilder('c').where('c.tenant_id = :tenantId', { tenantId });
    if (c) qb.andWhere('(c.updated_at, c.id) < (:u::timestamptz, :i)', { u: c.u, i: c.i });
    const rows = await qb
      .orderBy('c.updated_at', 'DESC')
      .addOrderBy('c.id', 'DESC')
      .limit(limit + 1)
      .getMany();
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(view),
      next_cursor: rows.length > limit && last ? encodeCursor({ u: last.updatedAt.toISOString(), i: last.id }) : null,
    };
  }

  async get(tenantId: string, id: string): Promise<ConversationView> {
    return view(await this.find(tenantId, id));
  }

  async rename(tenantId: string, id: string, title: string): Promise<ConversationView> {
    const row = await this.find(tenantId, id);
    row.title = title;
    row.updatedAt = new Date();
    return view(await this.repo.save(row));
  }

  /** Deletes the conversation and its turns (a running turn is canceled first). */
  async delete(tenantId: string, id: string): Promise<void> {
    const row = await this.find(tenantId, id);
    for (const turn of await this.tasks.contextTasks(tenantId, row.agentId, row.id, 10_000)) {
      if (isTerminal(turn.state)) continue;
      await this.tasks.cancel(tenantId, turn.id).catch((err: unknown) => {
        // It ended on its own meanwhile.
        if (!(err instanceof TaskError)) throw err;
      });
    }
    await this.tasks.deleteEndedInContext(tenantId, row.agentId, row.id);
    await this.repo.delete({ tenantId, id: row.id });
  }

  /** The thread's messages, oldest first: each turn's user message and the agent's replies and questions. */
  async messages(tenantId: string, id: string): Promise<{ items: ConversationMessage[] }> {
    const row = await this.find(tenantId, id);
    const turns = await this.tasks.contextTasks(tenantId, row.agentId, row.id, 500);
    return {
      items: turns.flatMap((t) =>
        t.history.map((m) => ({
          role: m.role === 'ROLE_AGENT' ? ('assistant' as const) : ('user' as const),
          content: messageText(m),
          request_id: t.id,
          at: t.timestamp,
        })),
      ),
    };
  }

  /** The conversation and its agent, for a new message; touches `updated_at`. */
  async forMessage(tenantId: string, id: string): Promise<{ conversation: ConversationView; agent: ResolvedAgent }> {
    const row = await this.find(tenantId, id);
    const agent = await this.catalog.resolve(tenantId, row.agentId);
    if (!agent) throw new DomainError('conflict', `the conversation's agent '${row.agentId}' no longer exists`);
    await this.repo.update({ tenantId, id: row.id }, { updatedAt: new Date() });
    return { conversation: view(row), agent };
  }

  private async find(tenantId: string, id: string): Promise<ConversationEntity> {
    const row = CURSOR_FIELDS.uuid.test(id) ? await this.repo.findOneBy({ tenantId, id }) : null;
    if (!row) throw DomainError.notFound('conversation');
    return row;
  }
}
