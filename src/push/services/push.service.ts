import { randomUUID } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Injectable } from '@nestjs/common';
import { DomainError } from '../../common/errors.js';
import { checkUrl, EgressError, parseHostList, refusal, type EgressPolicy } from '../../common/net/egress.js';
import { AppConfig } from '../../config/app-config.js';
import type { NewPushConfig } from '../../tasks/repositories/task-log.types.js';
import { TaskError } from '../../tasks/task.errors.js';
import type { PushConfigInput, PushConfigView, PushDialect } from '../../a2a-wire/push-config.js';
import { MAX_CONFIGS_PER_TASK, type PushDeliveryView } from '../push-config.js';
import { PushConfigRepository } from '../repositories/push-config.repository.js';
import { PushWorker } from './push-worker.service.js';

/** Who asks: the tenant, and the agent whose endpoint was called (undefined on the native API). */
export interface PushScope {
  tenantId: string;
  agentId?: string;
}

const configNotFound = (taskId: string, id: string): TaskError =>
  new TaskError(
    'task_not_found',
    `push notification config '${id.slice(0, 64)}' of task '${taskId.slice(0, 64)}' not found`,
  );

/**
 * Push notification configs (spec §3.1.7–3.1.10): tenant-scoped CRUD, the
 * webhook URL checked against the egress policy when it is set, and the
 * delivery worker told about new ones. Another tenant's task answers
 * exactly like a missing one.
 */
@Injectable()
export class PushService {
  private readonly policy: EgressPolicy;

  constructor(
    private readonly configs: PushConfigRepository,
    private readonly worker: PushWorker,
    config: AppConfig,
  ) {
    this.policy = { allowPrivate: false, allowHosts: parseHostList(config.pushAllowlist) };
  }

  /**
   * Refuses a webhook URL the delivery worker would not reach: not http(s),
   * credentials in it, or a name or address in a private, loopback,
   * link-local (metadata) or reserved range not allow-listed by the operator
   * (`ARBITER_PUSH_ALLOWLIST`). The worker checks again at every delivery
   * (DNS pinned), so a name that later resolves elsewhere is still refused.
   */
  async checkWebhook(url: string, field: string): Promise<void> {
    const refuse = (why: string): never => {
      throw DomainError.validation([{ field, messages: [why] }], `invalid params: ${field} is refused: ${why}`);
    };
    let parsed: URL;
    try {
      parsed = checkUrl(url, this.policy);
    } catch (err) {
      if (err instanceof EgressError) return refuse(policyHint(err.message));
      throw err;
    }
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) return;
    let addresses: { address: string }[];
    try {
      addresses = await lookup(host, { all: true });
    } catch {
      return refuse(`cannot resolve ${host}`);
    }
    for (const a of addresses) {
      const range = refusal(a.address, parsed, this.policy);
      if (range) refuse(policyHint(`${host} resolves to a ${range} address (blocked)`));
    }
  }

  /** §3.1.7: creates the config (or replaces the one with its id); only updates after now are pushed. */
  async create(
    scope: PushScope,
    taskId: string,
    input: PushConfigInput,
    dialect: PushDialect,
    urlField: string,
  ): Promise<PushConfigView> {
    if (!(await this.exists(scope, taskId))) throw TaskError.notFound(taskId);
    await this.checkWebhook(input.url, urlField);
    await this.checkRoom(scope, taskId, input, dialect);
    return this.store(scope, taskId, input, dialect);
  }

  /**
   * The config a message carries, as the statement that takes the message stores it (`CreateOptions.push`,
   * `ContinueOptions.push`): in one statement with the task or the message, so a task never runs without the
   * config its message asked for. `delivering` tells the worker once it is stored.
   */
  withMessage(scope: PushScope, input: PushConfigInput, dialect: PushDialect): (taskId: string) => NewPushConfig {
    return (taskId) =>
      this.configs.sealedConfig(scope.tenantId, taskId, configIdOf(input, dialect, taskId), input, dialect);
  }

  /** A config a message carried is stored (`withMessage`): the task's updates are delivered. */
  delivering(taskId: string): void {
    this.worker.watch(taskId);
  }

  /**
   * The config of a message sent again (the task it created is the answer), stored with its cursor at `fromSeq`
   * — unless the task has it already: a 1.0 config without an id gets a new id each time it is sent, so one to a
   * URL the task already pushes to is the same config sent again.
   */
  async attachOnce(
    scope: PushScope,
    taskId: string,
    input: PushConfigInput,
    dialect: PushDialect,
    fromSeq: number,
  ): Promise<void> {
    if (input.id === undefined && dialect === '1.0') {
      const existing = await this.configs.list(scope.tenantId, scope.agentId, taskId);
      if (existing.some((c) => c.url === input.url)) return;
    }
    await this.store(scope, taskId, input, dialect, fromSeq);
  }

  /** §3.1.8; v0.3 may leave out the config id: then the one named after the task, else the first. */
  async get(scope: PushScope, taskId: string, id: string | undefined): Promise<PushConfigView> {
    if (id !== undefined) {
      const found = await this.configs.get(scope.tenantId, scope.agentId, taskId, id);
      if (!found) throw (await this.exists(scope, taskId)) ? configNotFound(taskId, id) : TaskError.notFound(taskId);
      return found;
    }
    const all = await this.list(scope, taskId);
    const found = all.find((c) => c.id === taskId) ?? all[0];
    if (!found) throw configNotFound(taskId, taskId);
    return found;
  }

  /** §3.1.9: every config of the task (at most `MAX_CONFIGS_PER_TASK`: one page). */
  async list(scope: PushScope, taskId: string): Promise<PushConfigView[]> {
    const all = await this.configs.list(scope.tenantId, scope.agentId, taskId);
    if (all.length === 0 && !(await this.exists(scope, taskId))) throw TaskError.notFound(taskId);
    return all;
  }

  /** §3.1.10: idempotent; a missing task is TaskNotFound, a missing config is no error. */
  async delete(scope: PushScope, taskId: string, id: string): Promise<void> {
    if (!(await this.exists(scope, taskId))) throw TaskError.notFound(taskId);
    await this.configs.delete(scope.tenantId, scope.agentId, taskId, id);
  }

  /** Each config's delivery state (native API): cursor, failures, dead-letter. */
  async deliveries(tenantId: string, taskId: string): Promise<PushDeliveryView[]> {
    if (!(await this.configs.taskExists(tenantId, taskId))) throw TaskError.notFound(taskId);
    return this.configs.deliveries(tenantId, taskId);
  }

  private exists(scope: PushScope, taskId: string): Promise<boolean> {
    return this.configs.taskExists(scope.tenantId, taskId, scope.agentId);
  }

  /**
   * Refuses a config the task has no room for (a new id beyond
   * `MAX_CONFIGS_PER_TASK`). A message that continues a task with a config
   * is checked before the message is taken, so a refusal changes nothing.
   */
  async checkRoom(scope: PushScope, taskId: string, input: PushConfigInput, dialect: PushDialect): Promise<void> {
    const named = input.id ?? (dialect === '0.3' ? taskId : undefined); // else a fresh id: always a new config
    if (named !== undefined && (await this.configs.get(scope.tenantId, scope.agentId, taskId, named))) return;
    if ((await this.configs.count(scope.tenantId, scope.agentId, taskId)) >= MAX_CONFIGS_PER_TASK) {
      const field = dialect === '1.0' ? 'params.id' : 'params.pushNotificationConfig.id';
      throw DomainError.validation(
        [{ field, messages: [`a task has at most ${MAX_CONFIGS_PER_TASK} push notification configs`] }],
        `invalid params: task '${taskId}' already has ${MAX_CONFIGS_PER_TASK} push notification configs; delete one first`,
      );
    }
  }

  private async store(
    scope: PushScope,
    taskId: string,
    input: PushConfigInput,
    dialect: PushDialect,
    fromSeq?: number,
  ): Promise<PushConfigView> {
    const id = configIdOf(input, dialect, taskId);
    const view = await this.configs.upsert(scope.tenantId, scope.agentId, taskId, id, input, dialect, fromSeq);
    if (!view) throw TaskError.notFound(taskId);
    this.worker.watch(taskId);
    return view;
  }
}

/** A config's id: its own, else (v0.3 clients and the official SDK name a config without one after its task) the task's, else a new one. */
function configIdOf(input: PushConfigInput, dialect: PushDialect, taskId: string): string {
  return input.id ?? (dialect === '0.3' ? taskId : randomUUID());
}

function policyHint(why: string): string {
  return /blocked/.test(why)
    ? `${why}; webhooks may not target private, loopback, link-local or reserved addresses unless the operator allow-lists the host in ARBITER_PUSH_ALLOWLIST`
    : why;
}
