import type { PushConfigInput, PushConfigView, PushDialect } from '../push-config.js';
import { A2aError } from '../a2a-errors.js';
import { obj, optInt, optObj, optStr, str, type Json } from './params.js';

/** A push config of a create/set call, with where its URL sits in the params (for errors). */
export interface PushSetParams {
  taskId: string;
  config: PushConfigInput;
  urlField: string;
  dialect: PushDialect;
}

/** The config a SendMessage carries. */
export interface SendPushConfig {
  config: PushConfigInput;
  urlField: string;
  dialect: PushDialect;
}

export interface PushGetParams {
  taskId: string;
  /** v0.3 may leave it out. */
  id?: string;
}

export interface PushListParams {
  taskId: string;
}

export interface PushDeleteParams {
  taskId: string;
  id: string;
}

/** An HTTP auth scheme is a token (RFC 9110 §11.1); it goes into the Authorization header as is. */
const SCHEME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
/** Header-safe text: visible ASCII and spaces, no CR/LF (no header injection). */
const HEADER_TEXT = /^[\x20-\x7e]+$/;
const CONFIG_ID = /^[^\p{Cc}]{1,256}$/u;

function headerText(v: unknown, field: string, max: number): string | undefined {
  const s = optStr(v, field, max);
  if (s !== undefined && !HEADER_TEXT.test(s)) {
    throw A2aError.invalidParams(field, 'must be printable ASCII (it is sent in an HTTP header)');
  }
  return s;
}

function scheme(v: unknown, field: string): string {
  const s = str(v, field, 64);
  if (!SCHEME.test(s)) throw A2aError.invalidParams(field, 'must be an HTTP authentication scheme such as Bearer');
  return s;
}

/** Reads url, id and token of a config object at `field`; `auth` reads the dialect's authentication. */
function readConfig(
  c: Json,
  field: string,
  auth: (a: Json, field: string) => PushConfigInput['authentication'],
): PushConfigInput {
  const url = str(c.url, `${field}.url`, 2048);
  const id = optStr(c.id, `${field}.id`, 256);
  if (id !== undefined && !CONFIG_ID.test(id))
    throw A2aError.invalidParams(`${field}.id`, 'must not hold control characters');
  const token = headerText(c.token, `${field}.token`, 4096);
  const a = optObj(c.authentication, `${field}.authentication`);
  const authentication = a ? auth(a, `${field}.authentication`) : undefined;
  return { url, ...(id ? { id } : {}), ...(token ? { token } : {}), ...(authentication ? { authentication } : {}) };
}

function credentials(a: Json, field: string): { credentials?: string } {
  const c = headerText(a.credentials, `${field}.credentials`, 4096);
  return c ? { credentials: c } : {};
}

/** v1.0 `AuthenticationInfo`: one scheme, optional credentials. */
const v1Auth = (a: Json, field: string) => ({ scheme: scheme(a.scheme, `${field}.scheme`), ...credentials(a, field) });

/** v0.3 `PushNotificationAuthenticationInfo`: a list of schemes; Arbiter authenticates with the first. */
function v03Auth(a: Json, field: string) {
  if (!Array.isArray(a.schemes) || a.schemes.length === 0 || a.schemes.length > 8) {
    throw A2aError.invalidParams(`${field}.schemes`, 'is required and must be a list of 1 to 8 schemes');
  }
  const schemes = a.schemes.map((s, i) => scheme(s, `${field}.schemes[${i}]`));
  return { scheme: schemes[0], ...credentials(a, field) };
}

/** v1.0: the params of CreateTaskPushNotificationConfig are a `TaskPushNotificationConfig`. */
export function v1PushSet(p: Json): PushSetParams {
  const taskId = str(p.taskId, 'params.taskId', 64);
  return { taskId, config: readConfig(p, 'params', v1Auth), urlField: 'params.url', dialect: '1.0' };
}

/** v1.0 SendMessage `configuration.taskPushNotificationConfig` (its taskId, if any, must be the message's). */
export function v1SendPush(v: unknown, messageTaskId: string | undefined): SendPushConfig | undefined {
  const field = 'params.configuration.taskPushNotificationConfig';
  const c = optObj(v, field);
  if (!c) return undefined;
  const taskId = optStr(c.taskId, `${field}.taskId`, 64);
  if (taskId && taskId !== messageTaskId) {
    throw A2aError.invalidParams(`${field}.taskId`, 'must be empty (or the task the message continues)');
  }
  return { config: readConfig(c, field, v1Auth), urlField: `${field}.url`, dialect: '1.0' };
}

export function v1PushGet(p: Json): PushGetParams {
  return { taskId: str(p.taskId, 'params.taskId', 64), id: str(p.id, 'params.id', 256) };
}

export function v1PushList(p: Json): PushListParams {
  optInt(p.pageSize, 'params.pageSize', 0, 2 ** 31 - 1, true);
  // Every config of a task fits one page (there are at most 16): no page token is ever issued.
  if (optStr(p.pageToken, 'params.pageToken', 512) !== undefined) {
    throw A2aError.invalidParams('params.pageToken', 'is not a token this server issued');
  }
  return { taskId: str(p.taskId, 'params.taskId', 64) };
}

export function v1PushDelete(p: Json): PushDeleteParams {
  return { taskId: str(p.taskId, 'params.taskId', 64), id: str(p.id, 'params.id', 256) };
}

/** v0.3 `tasks/pushNotificationConfig/set`: `{ taskId, pushNotificationConfig }`. */
export function v03PushSet(p: Json): PushSetParams {
  const taskId = str(p.taskId, 'params.taskId', 64);
  const field = 'params.pushNotificationConfig';
  const config = readConfig(obj(p.pushNotificationConfig, field), field, v03Auth);
  return { taskId, config, urlField: `${field}.url`, dialect: '0.3' };
}

/** v0.3 message/send `configuration.pushNotificationConfig`. */
export function v03SendPush(v: unknown): SendPushConfig | undefined {
  const field = 'params.configuration.pushNotificationConfig';
  const c = optObj(v, field);
  if (!c) return undefined;
  return { config: readConfig(c, field, v03Auth), urlField: `${field}.url`, dialect: '0.3' };
}

export function v03PushGet(p: Json): PushGetParams {
  const id = optStr(p.pushNotificationConfigId, 'params.pushNotificationConfigId', 256);
  return { taskId: str(p.id, 'params.id', 64), ...(id ? { id } : {}) };
}

export function v03PushList(p: Json): PushListParams {
  return { taskId: str(p.id, 'params.id', 64) };
}

export function v03PushDelete(p: Json): PushDeleteParams {
  return {
    taskId: str(p.id, 'params.id', 64),
    id: str(p.pushNotificationConfigId, 'params.pushNotificationConfigId', 256),
  };
}

/** v1.0 `TaskPushNotificationConfig` as reads return it: no token, no credentials. */
export function v1PushConfig(v: PushConfigView): Json {
  // In a2a.proto's field order, as the SDK's codec writes it.
  return {
    id: v.id,
    taskId: v.taskId,
    url: v.url,
    ...(v.authentication ? { authentication: { scheme: v.authentication.scheme } } : {}),
  };
}

/** v0.3 `TaskPushNotificationConfig` as reads return it: no token, no credentials. */
export function v03PushConfig(v: PushConfigView): Json {
  return {
    taskId: v.taskId,
    pushNotificationConfig: {
      id: v.id,
      url: v.url,
      ...(v.authentication ? { authentication: { schemes: [v.authentication.scheme] } } : {}),
    },
  };
}
