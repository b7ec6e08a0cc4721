import { All, Controller, HttpCode, Logger, Param, Post, Req, Res, UseFilters } from '@nestjs/common';
import { A2aUnavailableFilter } from '../a2a-unavailable.filter.js';
import { safeError } from '../../common/safe-error.js';
import type { Request, Response } from 'express';
import { AppConfig } from '../../config/app-config.js';
import { CurrentTenant, type TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { findJsonProblem, MAX_JSON_DEPTH } from '../../common/json-guard.js';
import { writeSse } from '../../common/sse.js';
import { AGENT_ID_PATTERN } from '../../registry/constitution.js';
import { AgentCatalog } from '../../registry/services/agent-catalog.service.js';
import { A2aError, toJsonRpcError, type Dialect, type JsonRpcErrorObject } from '../a2a-errors.js';
import type { WireDialect } from '../dialects/dialect.js';
import { isObject } from '../dialects/params.js';
import { V03Dialect } from '../dialects/v03.dialect.js';
import { V1Dialect } from '../dialects/v1.dialect.js';
import { A2aDispatcher } from '../services/a2a-dispatcher.service.js';
import { negotiateVersion } from '../version.js';

type RpcId = string | number | null;

const V1 = new V1Dialect();
const V03 = new V03Dialect();

/**
 * `POST /v1/a2a/agents/:id`: JSON-RPC 2.0 (spec §9). Reads the version,
 * checks the envelope, picks the dialect from the method name and hands the
 * call to the dispatcher. Every JSON-RPC error is HTTP 200.
 */
@UseFilters(A2aUnavailableFilter)
@Controller('v1/a2a/agents')
export class A2aController {
  private readonly logger = new Logger('A2A');

  constructor(
    private readonly dispatcher: A2aDispatcher,
    private readonly catalog: AgentCatalog,
    private readonly config: AppConfig,
  ) {}

  @Post(':id')
  @HttpCode(200)
  async rpc(
    @CurrentTenant() t: TenantPrincipal,
    @Param('id') agentId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    if (!AGENT_ID_PATTERN.test(agentId)) throw DomainError.notFound(`agent '${agentId.slice(0, 64)}'`);
    const negotiated = negotiateVersion(req.headers['a2a-version'], req.query['A2A-Version']);
    if (typeof negotiated === 'object') {
      // Before any envelope parsing, so the id is null (seed 002).
      this.reply(
        res,
        null,
        toJsonRpcError(
          new A2aError(
            'version_not_supported',
            `A2A-Version '${negotiated.unsupported}' is not supported; supported: 1.0, 0.3`,
            undefined,
            {
              requestedVersion: negotiated.unsupported,
              supportedVersions: '1.0,0.3',
            },
          ),
          '1.0',
        ),
      );
      return;
    }
    let dialect: WireDialect = negotiated === '1.0' ? V1 : V03;
    let id: RpcId = null;
    const fail = (err: A2aError): void => this.reply(res, id, toJsonRpcError(err, dialect.version));
    try {
      let body: unknown;
      try {
        body = JSON.parse(typeof req.body === 'string' ? req.body : '');
      } catch {
        throw new A2aError('parse_error', 'invalid JSON payload');
      }
      if (Array.isArray(body)) throw new A2aError('invalid_request', 'batch requests are not supported');
      if (!isObject(body)) throw new A2aError('invalid_request', 'the request must be a JSON-RPC 2.0 request object');
      const rawId = body.id;
      if (typeof rawId === 'number' && Number.isFinite(rawId)) id = rawId;
      else if (typeof rawId === 'string' && findJsonProblem(rawId) === undefined && rawId.length <= 1024) id = rawId;
      else if (rawId !== undefined && rawId !== null) {
        throw new A2aError('invalid_request', 'id must be a string (at most 1024 characters), a number or null');
      }
      const problem = findJsonProblem(body, MAX_JSON_DEPTH, 'request');
      if (problem?.kind === 'depth') throw new A2aError('invalid_request', `${problem.path} ${problem.problem}`);
      if (problem) {
        throw A2aError.invalidParams(problem.path.replace(/^request\./, ''), problem.problem);
      }
      if (body.jsonrpc !== '2.0') throw new A2aError('invalid_request', 'jsonrpc must be "2.0"');
      if (typeof body.method !== 'string' || body.method.length === 0) {
        throw new A2aError('invalid_request', 'method must be a non-empty string');
      }
      const extra = Object.keys(body).filter((k) => !['jsonrpc', 'id', 'method', 'params'].includes(k));
      if (extra.length) throw new A2aError('invalid_request', `unknown member '${extra[0]}' in the request object`);
      // The method name picks the dialect: a v0.3 name is served in v0.3 shapes under any accepted version.
      const method = body.method;
      const v03op = Object.hasOwn(V03.methods, method) ? V03.methods[method] : undefined;
      const v1op = Object.hasOwn(V1.methods, method) ? V1.methods[method] : undefined;
      const op = v03op ?? v1op;
      if (!op) throw new A2aError('method_not_found', `method '${method.slice(0, 64)}' not found`);
      dialect = v03op ? V03 : V1;
      const params = body.params;
      if (params !== undefined && params !== null && !isObject(params)) {
        throw A2aError.invalidParams('params', 'must be an object');
      }
      const parsed = dialect.parse(op, isObject(params) ? params : {});
      const agent = await this.catalog.resolve(t.tenantId, agentId);
      if (!agent) throw new A2aError('task_not_found', `agent '${agentId}' not found`);

      const abort = new AbortController();
      const result = await this.dispatcher.dispatch(
        parsed,
        { tenantId: t.tenantId, agent, signal: abort.signal },
        dialect,
      );
      if (result.type === 'unary') {
        this.reply(res, id, undefined, result.result);
        return;
      }
      const d = dialect;
      const rpcId = id;
      const stream = result;
      async function* frames() {
        for await (const item of stream.items) {
          const frame = d.streamItem(item, stream.task);
          if (frame === undefined) continue;
          const seq = item.type === 'task' ? item.task.lastSeq : item.event.seq;
          yield { id: seq, event: 'message', data: { jsonrpc: '2.0', id: rpcId, result: frame } };
        }
      }
      await writeSse(res, frames(), {
        heartbeatMs: this.config.sseHeartbeatMs,
        abort,
        onError: (err) => ({
          event: 'message',
          data: { jsonrpc: '2.0', id: rpcId, error: this.errorObject(err, d.version) },
        }),
      });
    } catch (err) {
      if (res.headersSent) return;
      const known = A2aError.from(err);
      if (known) fail(known);
      else this.reply(res, id, this.errorObject(err, dialect.version));
    }
  }

  /** Any other HTTP method on the dispatch URL. */
  @All(':id')
  wrongMethod(@Res() res: Response): void {
    res.setHeader('Allow', 'POST');
    res.status(405).json({ error: 'use POST for JSON-RPC requests', code: 'method_not_allowed' });
  }

  private errorObject(err: unknown, dialect: Dialect): JsonRpcErrorObject {
    const known = A2aError.from(err);
    if (known) return toJsonRpcError(known, dialect);
    this.logger.error({ err: safeError(err) }, 'JSON-RPC request failed');
    return toJsonRpcError(new A2aError('internal', 'internal error'), dialect);
  }

  private reply(res: Response, id: RpcId, error?: JsonRpcErrorObject, result?: unknown): void {
    res.status(200).json(error ? { jsonrpc: '2.0', id, error } : { jsonrpc: '2.0', id, result: result ?? null });
  }
}
