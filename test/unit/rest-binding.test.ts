import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { A2aError } from '../../src/a2a-wire/a2a-errors.js';
import { V03Dialect } from '../../src/a2a-wire/dialects/v03.dialect.js';
import { V1Dialect } from '../../src/a2a-wire/dialects/v1.dialect.js';
import { matchRoute, restParams } from '../../src/a2a-inbound/rest/rest-routes.js';
import { toRestError } from '../../src/a2a-inbound/rest/rest-errors.js';
import { modelFamily } from '../../src/a2a-inbound/services/agent-card.service.js';
import { DomainError } from '../../src/common/errors.js';
import { TaskError } from '../../src/tasks/task.errors.js';

describe('HTTP+JSON routes (spec §11.3)', () => {
  it('matches every route to its operation, with decoded ids', () => {
    const cases: [string, string, unknown][] = [
      ['POST', 'message:send', { kind: 'route', op: 'send' }],
      ['POST', 'message:stream', { kind: 'route', op: 'stream' }],
      ['GET', 'tasks', { kind: 'route', op: 'list' }],
      ['GET', 'tasks/a%3Ab', { kind: 'route', op: 'get', taskId: 'a:b' }],
      ['POST', 'tasks/t1:cancel', { kind: 'route', op: 'cancel', taskId: 't1' }],
      ['POST', 'tasks/t1:subscribe', { kind: 'route', op: 'subscribe', taskId: 't1' }],
      ['GET', 'tasks/t1:subscribe', { kind: 'route', op: 'subscribe', taskId: 't1' }],
      ['POST', 'tasks/t1/pushNotificationConfigs', { kind: 'route', op: 'push_set', taskId: 't1' }],
      ['GET', 'tasks/t1/pushNotificationConfigs', { kind: 'route', op: 'push_list', taskId: 't1' }],
      ['GET', 'tasks/t1/pushNotificationConfigs/c', { kind: 'route', op: 'push_get', taskId: 't1', configId: 'c' }],
      [
        'DELETE',
        'tasks/t1/pushNotificationConfigs/c',
        { kind: 'route', op: 'push_delete', taskId: 't1', configId: 'c' },
      ],
      ['GET', 'extendedAgentCard', { kind: 'route', op: 'extended_card' }],
      ['GET', 'tasks/t1:cancel', { kind: 'method_not_allowed', allow: ['POST'] }],
      ['PUT', 'tasks/t1/pushNotificationConfigs', { kind: 'method_not_allowed', allow: ['POST', 'GET'] }],
      ['GET', 'task', { kind: 'not_found' }],
      ['GET', 'tasks/', { kind: 'not_found' }],
      ['GET', 'tasks/a/b/c/d', { kind: 'not_found' }],
    ];
    for (const [method, path, expected] of cases)
      assert.deepEqual(matchRoute(method, path), expected, `${method} ${path}`);
  });

  it("a2a.proto's `/{tenant}/…` bindings: every route after a tenant prefix; the agent's own id read first", () => {
    const cases: [string, string, string | undefined, unknown][] = [
      ['POST', 'research/message:send', 'research', { kind: 'route', op: 'send', tenant: 'research' }],
      ['GET', 'research/tasks/t1', 'research', { kind: 'route', op: 'get', taskId: 't1', tenant: 'research' }],
      ['GET', 'other/tasks', 'research', { kind: 'route', op: 'list', tenant: 'other' }],
      ['GET', 'no%20such/extendedAgentCard', 'research', { kind: 'route', op: 'extended_card', tenant: 'no such' }],
      [
        'DELETE',
        'x/tasks/t1/pushNotificationConfigs/c',
        'research',
        { kind: 'route', op: 'push_delete', taskId: 't1', configId: 'c', tenant: 'x' },
      ],
      ['GET', 'x/tasks/t1:cancel', 'research', { kind: 'method_not_allowed', allow: ['POST'] }],
      // Both readings match: the agent's own id as a prefix wins, else the path as it is.
      ['GET', 'tasks/tasks', 'tasks', { kind: 'route', op: 'list', tenant: 'tasks' }],
      ['GET', 'tasks/tasks', 'research', { kind: 'route', op: 'get', taskId: 'tasks' }],
      ['GET', 'tasks/t1', 'tasks', { kind: 'route', op: 'get', taskId: 't1' }],
      ['GET', 'a/b/tasks', 'research', { kind: 'not_found' }],
      ['GET', '%zz/tasks', 'research', { kind: 'not_found' }],
    ];
    for (const [method, path, agent, expected] of cases)
      assert.deepEqual(matchRoute(method, path, agent), expected, `${method} ${path} (${agent})`);
  });

  it('§11.5: query strings become typed params; the path wins over the body; unknown parameters are ignored', () => {
    const list = restParams(
      { kind: 'route', op: 'list' },
      { pageSize: '5', includeArtifacts: 'false', status: 'TASK_STATE_WORKING', x: '1' },
      undefined,
    );
    assert.deepEqual(Object.fromEntries(Object.entries(list).filter(([, v]) => v !== undefined)), {
      pageSize: 5,
      includeArtifacts: false,
      status: 'TASK_STATE_WORKING',
    });
    assert.equal(
      restParams({ kind: 'route', op: 'get', taskId: 't' }, { history_length: '3' }, undefined).historyLength,
      3,
    );
    assert.equal(
      restParams({ kind: 'route', op: 'get', taskId: 't' }, { historyLength: '' }, undefined).historyLength,
      undefined,
    );
    assert.deepEqual(restParams({ kind: 'route', op: 'cancel', taskId: 't' }, {}, { id: 'other', metadata: {} }), {
      id: 't',
      metadata: {},
    });
    assert.throws(() => restParams({ kind: 'route', op: 'send' }, {}, undefined), A2aError);
    assert.throws(() => restParams({ kind: 'route', op: 'send' }, {}, [1]), A2aError);
    assert.throws(
      () =>
        restParams({ kind: 'route', op: 'get', taskId: 't' }, { historyLength: '1', history_length: '2' }, undefined),
      A2aError,
    );
  });

  it('push-config routes give each dialect its own params: v0.3 names the task id and the config pushNotificationConfigId', () => {
    const v03 = new V03Dialect();
    const route = (op: 'push_get' | 'push_delete' | 'push_list', configId?: string) =>
      ({ kind: 'route', op, taskId: 't', ...(configId ? { configId } : {}) }) as const;
    assert.deepEqual(v03.parse('push_get', restParams(route('push_get', 'c'), {}, undefined, '0.3')), {
      op: 'push_get',
      params: { taskId: 't', id: 'c' },
    });
    assert.deepEqual(v03.parse('push_delete', restParams(route('push_delete', 'c'), {}, undefined, '0.3')), {
      op: 'push_delete',
      params: { taskId: 't', id: 'c' },
    });
    assert.deepEqual(v03.parse('push_list', restParams(route('push_list'), {}, undefined, '0.3')), {
      op: 'push_list',
      params: { taskId: 't' },
    });
    const v1 = new V1Dialect();
    assert.deepEqual(v1.parse('push_get', restParams(route('push_get', 'c'), {}, undefined, '1.0')), {
      op: 'push_get',
      params: { taskId: 't', id: 'c' },
    });
  });

  it('§11.5 query parameters by their JSON name or their proto name (page_size …); both names of one is 400', () => {
    const defined = (p: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined));
    const list = restParams(
      { kind: 'route', op: 'list' },
      {
        context_id: 'c',
        page_size: '5',
        page_token: 'tok',
        history_length: '2',
        status_timestamp_after: '2026-01-01T00:00:00Z',
        include_artifacts: 'true',
        status: 'TASK_STATE_WORKING',
      },
      undefined,
    );
    assert.deepEqual(defined(list), {
      contextId: 'c',
      status: 'TASK_STATE_WORKING',
      pageSize: 5,
      pageToken: 'tok',
      historyLength: 2,
      statusTimestampAfter: '2026-01-01T00:00:00Z',
      includeArtifacts: true,
    });
    assert.deepEqual(
      defined(restParams({ kind: 'route', op: 'push_list', taskId: 't' }, { page_size: '3' }, undefined)),
      { taskId: 't', pageSize: 3 },
    );
    const both = (() => {
      try {
        restParams({ kind: 'route', op: 'list' }, { pageSize: '5', page_size: '5' }, undefined);
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    assert.ok(both instanceof A2aError);
    assert.equal(both.field, 'params.pageSize');
    // An empty value is an absent one: no clash.
    assert.equal(restParams({ kind: 'route', op: 'list' }, { pageSize: '', page_size: '4' }, undefined).pageSize, 4);
  });

  it('the path wins over the body under either name of the field (task_id in a push config body)', () => {
    assert.deepEqual(
      restParams(
        { kind: 'route', op: 'push_set', taskId: 't' },
        {},
        { task_id: 'other', url: 'https://example.test/h' },
      ),
      { url: 'https://example.test/h', taskId: 't' },
    );
  });
});

describe('§11.6 / §5.4 error mapping', () => {
  it('every A2A error gets the HTTP status of the table, an ErrorInfo reason, and no params. prefix', () => {
    const cases: [unknown, number, string, string | undefined][] = [
      [new TaskError('task_not_found', "task 'x' not found"), 404, 'NOT_FOUND', 'TASK_NOT_FOUND'],
      [new TaskError('task_not_cancelable', 'no'), 400, 'FAILED_PRECONDITION', 'TASK_NOT_CANCELABLE'],
      [new A2aError('push_not_supported', 'no'), 400, 'FAILED_PRECONDITION', 'PUSH_NOTIFICATION_NOT_SUPPORTED'],
      [new A2aError('unsupported_operation', 'no'), 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION'],
      [new A2aError('content_type_not_supported', 'no'), 400, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED'],
      [
        new A2aError('extended_card_not_configured', 'no'),
        400,
        'FAILED_PRECONDITION',
        'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
      ],
      [new A2aError('version_not_supported', 'no'), 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED'],
      [A2aError.invalidParams('params.pageSize', 'bad'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS'],
      [new A2aError('method_not_found', 'no'), 404, 'NOT_FOUND', 'METHOD_NOT_FOUND'],
      [new DomainError('unauthorized', 'no'), 401, 'UNAUTHENTICATED', 'UNAUTHENTICATED'],
      [new DomainError('unavailable', 'down'), 503, 'UNAVAILABLE', 'INTERNAL'],
      [new DomainError('unsupported_media_type', 'json only'), 415, 'INVALID_ARGUMENT', undefined],
      [new DomainError('payload_too_large', 'big'), 413, 'OUT_OF_RANGE', undefined],
      [new DomainError('invalid_json', 'bad'), 400, 'INVALID_ARGUMENT', undefined],
    ];
    for (const [err, http, status, reason] of cases) {
      const r = toRestError(err);
      assert.equal(r.status, http, String(err));
      assert.equal(r.body.error.code, http);
      assert.equal(r.body.error.status, status, String(err));
      const info = r.body.error.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
      assert.equal(info?.reason, reason, String(err));
      if (reason) assert.equal(info?.domain, 'a2a-protocol.org');
    }
    const field = toRestError(A2aError.invalidParams('params.pageSize', 'must be small'));
    assert.equal(field.body.error.message, 'invalid params: pageSize must be small');
    assert.deepEqual(field.body.error.details[0], {
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'pageSize', description: 'invalid params: pageSize must be small' }],
    });
    assert.equal(
      toRestError(new DomainError('unauthorized', 'x')).headers['WWW-Authenticate'],
      'Bearer realm="arbiter"',
    );
  });

  it('an unexpected error is 500 "internal error", its text only for the log', () => {
    let logged: unknown;
    const r = toRestError(new Error('secret detail'), (e) => (logged = e));
    assert.equal(r.status, 500);
    assert.equal(r.body.error.message, 'internal error');
    assert.ok(!JSON.stringify(r.body).includes('secret detail'));
    assert.ok(logged instanceof Error);
  });
});

describe('extended card: model family', () => {
  it('names the provider and the first word of the model, never the full id', () => {
    assert.equal(modelFamily('anthropic/claude-sonnet-4-5'), 'anthropic/claude');
    assert.equal(modelFamily('gpt-4o-mini'), 'openai/gpt');
    assert.equal(modelFamily('o3-mini'), 'openai/o3');
    assert.equal(modelFamily('ollama/llama3.2'), 'ollama/llama3');
    assert.equal(modelFamily('echo'), 'echo');
    assert.equal(modelFamily('foo/bar'), undefined);
  });
});
