/**
 * The A2A v1.0 ProtoJSON shapes the HTTP+JSON binding exchanges (spec §4,
 * `a2a.proto`), as OpenAPI 3.1 schemas. Only what a client needs to build a
 * request and read a reply; the proto is normative.
 */
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const obj = (properties: Record<string, object>, required: string[] = [], description?: string) => ({
  type: 'object',
  ...(description ? { description } : {}),
  properties,
  ...(required.length ? { required } : {}),
});
const str = (description?: string) => ({ type: 'string', ...(description ? { description } : {}) });
const TASK_STATES = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_FAILED',
  'TASK_STATE_REJECTED',
];

export const A2A_SCHEMAS: Record<string, object> = {
  A2aPart: obj(
    {
      text: str(),
      raw: { type: 'string', contentEncoding: 'base64' },
      url: str(),
      data: { description: 'any JSON value' },
      mediaType: str(),
      filename: str(),
      metadata: { type: 'object' },
    },
    [],
    'exactly one of text, raw, url, data',
  ),
  A2aMessage: obj(
    {
      messageId: str(),
      role: { type: 'string', enum: ['ROLE_USER', 'ROLE_AGENT'] },
      parts: { type: 'array', items: ref('A2aPart') },
      contextId: str(),
      taskId: str(),
      referenceTaskIds: { type: 'array', items: str() },
      extensions: { type: 'array', items: str() },
      metadata: { type: 'object' },
    },
    ['messageId', 'role', 'parts'],
  ),
  A2aTaskStatus: obj({ state: { type: 'string', enum: TASK_STATES }, message: ref('A2aMessage'), timestamp: str() }, [
    'state',
  ]),
  A2aArtifact: obj(
    {
      artifactId: str(),
      name: str(),
      description: str(),
      parts: { type: 'array', items: ref('A2aPart') },
      metadata: { type: 'object' },
    },
    ['artifactId', 'parts'],
  ),
  A2aTask: obj(
    {
      id: str(),
      contextId: str(),
      status: ref('A2aTaskStatus'),
      artifacts: { type: 'array', items: ref('A2aArtifact') },
      history: { type: 'array', items: ref('A2aMessage') },
      metadata: { type: 'object' },
    },
    ['id', 'contextId', 'status'],
  ),
  A2aAuthenticationInfo: obj(
    { scheme: str('an HTTP authentication scheme such as Bearer'), credentials: str('write-only: never returned') },
    ['scheme'],
  ),
  // Flat, as `a2a.proto` has it (v1.0 has no nested `pushNotificationConfig`; that is v0.3's JSON-RPC shape).
  A2aTaskPushNotificationConfig: obj(
    {
      tenant: str(),
      id: str('without one the server assigns a UUID'),
      taskId: str('on the REST route the path names the task and wins over this'),
      url: str('the webhook; refused at config time when the egress guard refuses it'),
      token: str('write-only: never returned'),
      authentication: ref('A2aAuthenticationInfo'),
    },
    ['url'],
    'spec §11.3.3, `TaskPushNotificationConfig`; reads return neither token nor credentials',
  ),
  A2aSendMessageRequest: obj(
    {
      message: ref('A2aMessage'),
      configuration: obj({
        acceptedOutputModes: { type: 'array', items: str() },
        historyLength: { type: 'integer', minimum: 0 },
        returnImmediately: { type: 'boolean' },
        taskPushNotificationConfig: ref('A2aTaskPushNotificationConfig'),
      }),
      metadata: { type: 'object' },
    },
    ['message'],
  ),
  A2aSendMessageResponse: obj({ task: ref('A2aTask'), message: ref('A2aMessage') }, [], 'one of task, message'),
  A2aStreamResponse: obj(
    {
      task: ref('A2aTask'),
      message: ref('A2aMessage'),
      statusUpdate: obj({
        taskId: str(),
        contextId: str(),
        status: ref('A2aTaskStatus'),
        metadata: { type: 'object' },
      }),
      artifactUpdate: obj({
        taskId: str(),
        contextId: str(),
        artifact: ref('A2aArtifact'),
        append: { type: 'boolean' },
        lastChunk: { type: 'boolean' },
      }),
    },
    [],
    'one SSE `data:` frame; exactly one member',
  ),
  A2aListTasksResponse: obj(
    {
      tasks: { type: 'array', items: ref('A2aTask') },
      nextPageToken: str(),
      pageSize: { type: 'integer' },
      totalSize: { type: 'integer' },
    },
    ['tasks', 'nextPageToken'],
  ),
  A2aListPushConfigsResponse: obj({
    configs: { type: 'array', items: ref('A2aTaskPushNotificationConfig') },
    nextPageToken: str(),
  }),
  A2aAgentCard: obj(
    {
      name: str(),
      description: str(),
      version: str(),
      supportedInterfaces: {
        type: 'array',
        items: obj({ url: str(), protocolBinding: str(), protocolVersion: str(), tenant: str() }),
      },
      capabilities: { type: 'object' },
      skills: { type: 'array', items: { type: 'object' } },
    },
    ['name', 'supportedInterfaces'],
  ),
  A2aError: obj(
    {
      error: obj(
        {
          code: { type: 'integer', description: 'the HTTP status' },
          status: str('google.rpc.Code name (INVALID_ARGUMENT, NOT_FOUND, …)'),
          message: str(),
          details: {
            type: 'array',
            items: {
              type: 'object',
              description: 'google.rpc.ErrorInfo (reason, domain a2a-protocol.org), BadRequest',
            },
          },
        },
        ['code', 'status', 'message'],
      ),
    },
    ['error'],
    'spec §11.6: a google.rpc.Status',
  ),
  JsonRpcRequest: obj(
    {
      jsonrpc: { const: '2.0' },
      id: { type: ['string', 'integer', 'null'] },
      method: str('v1.0: SendMessage, GetTask, … (with A2A-Version: 1.0); v0.3: message/send, tasks/get, …'),
      params: { type: 'object' },
    },
    ['jsonrpc', 'method'],
  ),
  JsonRpcResponse: obj({
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer', 'null'] },
    result: {},
    error: obj({ code: { type: 'integer' }, message: str(), data: {} }, ['code', 'message']),
  }),
  ErrorBody: obj(
    {
      error: str(),
      code: str('validation_failed, unauthorized, forbidden, not_found, conflict, rate_limited, …'),
      details: { type: 'array', items: obj({ field: str(), messages: { type: 'array', items: str() } }) },
      request_id: str(),
    },
    ['error', 'code'],
    'the error body of every REST route outside the A2A bindings',
  ),
};
