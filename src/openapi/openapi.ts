import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { QUERY_TYPES, REST_ROUTE_PATHS } from '../a2a-inbound/rest/rest-routes.js';
import { spellingsOf } from '../a2a-wire/dialects/proto-names.js';
import { PROTO_METHOD_OF } from '../a2a-wire/dialects/dialects.js';
import type { Operation } from '../a2a-wire/dialects/dialect.js';
import { OPERATION_SCOPES } from '../a2a-inbound/handler/a2a-call.js';
import { A2A_SCHEMAS } from './a2a-schemas.js';
import { SCHEMA_OPTIONS } from '../common/api-docs.js';
import { anyOf, BEARER, BEARER_DESCRIPTION, documentRouteSecurity } from './security.js';

type OperationObject = Record<string, unknown>;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ 'application/json': { schema }, 'application/a2a+json': { schema } });
const sse = (description: string) => ({
  description,
  content: {
    'text/event-stream': { schema: { type: 'string', description: 'SSE frames; each data: is an A2aStreamResponse' } },
  },
});

/** What each HTTP+JSON operation takes and answers (spec §11.3). */
const REST_OPS: Record<Operation, { summary: string; body?: string; ok: object; query?: string[] }> = {
  send: { summary: 'SendMessage', body: 'A2aSendMessageRequest', ok: { content: json(ref('A2aSendMessageResponse')) } },
  stream: {
    summary: 'SendStreamingMessage (SSE)',
    body: 'A2aSendMessageRequest',
    ok: sse('the task, then its updates'),
  },
  get: { summary: 'GetTask', ok: { content: json(ref('A2aTask')) }, query: ['historyLength'] },
  list: {
    summary: 'ListTasks',
    ok: { content: json(ref('A2aListTasksResponse')) },
    query: [
      'contextId',
      'status',
      'pageSize',
      'pageToken',
      'historyLength',
      'statusTimestampAfter',
      'includeArtifacts',
    ],
  },
  cancel: { summary: 'CancelTask', ok: { content: json(ref('A2aTask')) } },
  subscribe: { summary: 'SubscribeToTask (SSE)', ok: sse('the task, then its updates until it ends') },
  push_set: {
    summary: 'CreateTaskPushNotificationConfig',
    body: 'A2aTaskPushNotificationConfig',
    ok: { content: json(ref('A2aTaskPushNotificationConfig')) },
  },
  push_get: { summary: 'GetTaskPushNotificationConfig', ok: { content: json(ref('A2aTaskPushNotificationConfig')) } },
  push_list: {
    summary: 'ListTaskPushNotificationConfigs',
    ok: { content: json(ref('A2aListPushConfigsResponse')) },
    query: ['pageSize', 'pageToken'],
  },
  push_delete: { summary: 'DeleteTaskPushNotificationConfig', ok: { description: 'deleted' } },
  extended_card: { summary: 'GetExtendedAgentCard', ok: { content: json(ref('A2aAgentCard')) } },
};

const param = (name: string, where: 'path' | 'query' | 'header', description?: string) => ({
  name,
  in: where,
  required: where === 'path',
  schema: { type: 'string' },
  ...(description ? { description } : {}),
});

function restOperation(path: string, op: Operation, prefixed: boolean, alias?: string): OperationObject {
  const spec = REST_OPS[op];
  const parameters = [
    param('agentId', 'path', 'the agent'),
    ...(prefixed
      ? [param('tenant', 'path', "the agent's id again, the card's `tenant` (a2a.proto's `/{tenant}/…` binding)")]
      : []),
    ...(path.includes('{taskId}') ? [param('taskId', 'path')] : []),
    ...(path.includes('{configId}') ? [param('configId', 'path')] : []),
    ...(spec.query ?? []).map((q) => {
      const proto = spellingsOf(QUERY_TYPES[op] ?? '', q)[1];
      return param(q, 'query', proto ? `also read as \`${proto}\`, its proto field name` : undefined);
    }),
    param('A2A-Version', 'header', '1.0 (or ?A2A-Version=); absent means 0.3'),
  ];
  return {
    tags: ['A2A HTTP+JSON'],
    summary: spec.summary,
    operationId: `a2aRest_${op}${alias ? `_${alias}` : ''}${prefixed ? '_tenant' : ''}`,
    security: anyOf(OPERATION_SCOPES[op]),
    parameters,
    ...(spec.body ? { requestBody: { required: true, content: json(ref(spec.body)) } } : {}),
    responses: {
      200: { description: 'OK', ...spec.ok },
      default: { description: 'an error (spec §11.6)', content: json(ref('A2aError')) },
    },
  };
}

/** The methods grouped by the scopes they accept: `a2a:invoke: SendMessage, … ; a2a:invoke or agents:read …: …`. */
function methodScopes(): string {
  const groups = new Map<string, string[]>();
  for (const [op, scopes] of Object.entries(OPERATION_SCOPES) as [Operation, readonly string[]][]) {
    const key = scopes.join(' or ');
    groups.set(key, [...(groups.get(key) ?? []), PROTO_METHOD_OF[op]]);
  }
  return [...groups].map(([scopes, methods]) => `${scopes}: ${methods.join(', ')}`).join('; ');
}

/** The scopes of which any one reaches the JSON-RPC endpoint: every method's (each method then needs its own). */
const JSONRPC_SCOPES = [...new Set(Object.values(OPERATION_SCOPES).flat())];

/** The JSON-RPC endpoint of an agent (spec §9). */
const JSONRPC_OPERATION: OperationObject = {
  tags: ['A2A JSON-RPC'],
  summary:
    'A2A JSON-RPC 2.0 endpoint of the agent (v1.0 with A2A-Version: 1.0, else v0.3); streaming methods answer SSE',
  description:
    `The scopes each method accepts (the v0.3 names alike): ${methodScopes()}. A method whose scopes the ` +
    'credential lacks is answered with JSON-RPC error -32000, ErrorInfo reason PERMISSION_DENIED, ' +
    '`metadata.required_scopes`.',
  operationId: 'a2aJsonRpc',
  security: anyOf(JSONRPC_SCOPES),
  parameters: [
    param('agentId', 'path', 'the agent'),
    param('A2A-Version', 'header', '1.0 (or ?A2A-Version=); absent means 0.3'),
  ],
  requestBody: { required: true, content: json(ref('JsonRpcRequest')) },
  responses: {
    200: {
      description: 'the JSON-RPC response (errors too), or an SSE stream of them for the streaming methods',
      content: { ...json(ref('JsonRpcResponse')), 'text/event-stream': sse('').content['text/event-stream'] },
    },
    default: { description: 'a refusal before the call is read (401, 413, 415 …)', content: json(ref('ErrorBody')) },
  },
};

/**
 * The OpenAPI 3.1 document: the Nest routes as `@nestjs/swagger` reads them
 * (request schemas from the DTOs' class-validator decorators, the same ones
 * the global ValidationPipe enforces), plus the A2A bindings over HTTP —
 * served by the A2A HTTP controller ahead of Nest's router, so described here from their
 * route tables.
 */
export function buildOpenApi(app: INestApplication, version: string): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Arbiter')
    .setDescription(
      'Multi-tenant A2A gateway and agent runtime. Tenant routes take a tenant credential (atr_… or a trusted ' +
        'issuer’s JWT) holding one of the scopes the operation lists, /v1/admin an operator credential (adm_…), ' +
        'as `Authorization: Bearer`. The A2A bindings (JSON-RPC, HTTP+JSON) follow the A2A ' +
        'specification; their shapes here are a guide, the specification is normative.',
    )
    .setVersion(version)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: BEARER_DESCRIPTION }, BEARER)
    .addSecurityRequirements(BEARER)
    .build();
  const doc = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
  });
  const dtoSchemas = validationMetadatasToSchemas(SCHEMA_OPTIONS) as Record<string, object>;
  delete dtoSchemas.AppConfig; // validated too, but environment, not a request
  doc.components = {
    ...doc.components,
    schemas: { ...doc.components?.schemas, ...dtoSchemas, ...A2A_SCHEMAS },
  };
  // What each route accepts, from the same metadata the access guard reads (open routes: nothing).
  documentRouteSecurity(app, doc);
  const rpc = (doc.paths['/v1/a2a/agents/{agentId}'] ??= {}) as Record<string, unknown>;
  rpc.post = JSONRPC_OPERATION;
  // Each route also after the agent's id as a tenant prefix, as the SDK's REST client sends it.
  for (const prefixed of [false, true]) {
    for (const [i, r] of REST_ROUTE_PATHS.entries()) {
      const path = `/v1/a2a/agents/{agentId}/${prefixed ? '{tenant}/' : ''}${r.path}`;
      const item = (doc.paths[path] ??= {}) as Record<string, unknown>;
      // An operation served by a second method too (SubscribeToTask's GET) is named after that method.
      const again = REST_ROUTE_PATHS.slice(0, i).some((x) => x.op === r.op);
      item[r.method.toLowerCase()] = restOperation(r.path, r.op, prefixed, again ? r.method.toLowerCase() : undefined);
    }
  }
  return doc;
}

/**
 * `build`, called once: its result, or the error it threw, is what every later call returns or throws. The
 * document is built at the first request for it, by anyone, and a build that failed is not tried again on every
 * request (each try would hold the event loop for as long as a build takes).
 */
export function once<T>(build: () => T): () => T {
  let outcome: { value: T } | { error: unknown } | undefined;
  return () => {
    if (!outcome) {
      try {
        outcome = { value: build() };
      } catch (error) {
        outcome = { error };
      }
    }
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  };
}

/**
 * `GET /openapi.json` (and `/openapi.yaml`) and the docs page at `/docs`, for anyone (the document holds no secret).
 * `build` makes the document: called once, at the first request for it.
 */
export function serveOpenApi(app: INestApplication, build: () => OpenAPIObject): void {
  SwaggerModule.setup('docs', app, once(build), {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'Arbiter API',
    swaggerOptions: { persistAuthorization: false },
  });
}
