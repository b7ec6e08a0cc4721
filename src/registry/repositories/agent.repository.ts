import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { QueryFailedError, type DataSource, type EntityManager } from 'typeorm';
import { AgentEntity } from '../entities/agent.entity.js';
import type { Constitution } from '../constitution.js';

export class DuplicateAgentError extends Error {}

/** Work committed in the same transaction as an agent change (its audit row). */
export type AlongWith = (em: EntityManager) => Promise<void>;
const nothing: AlongWith = () => Promise.resolve();

/** Stored agents; every method is scoped by tenant id first. */
@Injectable()
export class AgentRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  find(tenantId: string, id: string, em: EntityManager = this.ds.manager): Promise<AgentEntity | null> {
    return em.findOneBy(AgentEntity, { tenantId, id });
  }

  /** Ids in ascending order after `afterId`. */
  list(tenantId: string, limit: number, afterId?: string): Promise<AgentEntity[]> {
    const qb = this.ds
      .getRepository(AgentEntity)
      .createQueryBuilder('a')
      .where('a.tenant_id = :tenantId', { tenantId });
    if (afterId !== undefined) qb.andWhere('a.id > :afterId COLLATE "C"', { afterId });
    return qb.orderBy('a.id COLLATE "C"', 'ASC').limit(limit).getMany();
  }

  async insert(tenantId: string, id: string, constitution: Constitution, along = nothing): Promise<AgentEntity> {
    try {
      await this.ds.transaction(async (em) => {
        await em.insert(AgentEntity, { tenantId, id, constitution });
        await along(em);
      });
    } catch (err) {
      if (err instanceof QueryFailedError && (err.driverError as { code?: string }).code === '23505') {
        throw new DuplicateAgentError(id);
      }
      throw err;
    }
    const row = await this.find(tenantId, id);
    if (!row) throw new Error('inserted agent vanished');
    return row;
  }

  /** Row-locked read-modify-write, so concurrent PATCHes never lose a field. */
  update(
    tenantId: string,
    id: string,
    change: (current: Constitution) => Constitution,
    along = nothing,
  ): Promise<AgentEntity | null> {
    return this.ds.transaction(async (em) => {
      const row = await em
        .getRepository(AgentEntity)
        .createQueryBuilder('a')
        .setLock('pessimistic_write')
        .where('a.tenant_id = :tenantId AND a.id = :id', { tenantId, id })
        .getOne();
      if (!row) return null;
      const next = change(row.constitution);
      await em
        .createQueryBuilder()
        .update(AgentEntity)
        .set({ constitution: next })
        .where('tenant_id = :tenantId AND id = :id', { tenantId, id })
        .execute();
      await along(em);
      return em.findOneBy(AgentEntity, { tenantId, id });
    });
  }

  delete(tenantId: string, id: string, along = nothing): Promise<boolean> {
    return this.ds.transaction(async (em) => {
      const res = await em.delete(AgentEntity, { tenantId, id });
      if (!res.affected) return false;
      await along(em);
      return true;
    });
  }
}
