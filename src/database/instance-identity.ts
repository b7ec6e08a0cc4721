import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Injectable } from '@nestjs/common';

/**
 * This process's identity: the owner of the runs it holds, the sender of its
 * change notices, and the name of its notice connection (`arbiter:<id>` in
 * `pg_stat_activity`, at most 63 characters), by which other replicas see it
 * is alive.
 */
@Injectable()
export class InstanceIdentity {
  readonly id = `${hostname().slice(0, 32)}:${process.pid}:${randomBytes(4).toString('hex')}`;
  /** The `application_name` of this replica's notice connection. */
  readonly connectionName = `${NOTICE_CONNECTION_PREFIX}${this.id}`;
}

/** Every replica's notice connection is named this, then its id. */
export const NOTICE_CONNECTION_PREFIX = 'arbiter:';
