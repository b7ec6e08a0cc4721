import { RequestMethod, type INestApplication } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService, ModulesContainer, Reflector } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import {
  ACCESS_KEY,
  OPERATOR_ROLES,
  SCOPES_KEY,
  TENANT_SCOPES,
  type Access,
  type OperatorRole,
  type TenantScope,
} from '../common/auth.decorators.js';

/** The security scheme's name in the document. */
export const BEARER = 'bearer';

/** What each tenant scope lets a tenant credential do (the scheme's description). */
const SCOPE_MEANINGS: Readonly<Record<TenantScope, string>> = {
  'a2a:invoke': 'call agents (the A2A bindings, /v1/orchestrate, chat, conversations) and act on its tasks',
  'agents:read': "read the tenant's agents, their cards and the models",
  'agents:write': 'create, change and delete agents (and read them)',
  'tasks:read': "read the tenant's tasks, conversations and their events, without starting or canceling any",
};
const ROLE_MEANINGS: Readonly<Record<OperatorRole, string>> = {
  admin: 'every /v1/admin route, and /metrics (which the scrape token ARBITER_METRICS_TOKEN also reads)',
  auditor: 'the GET routes of /v1/admin, and /metrics',
};

/** The bearer scheme's description: the kinds of credential, the scopes and the roles. */
export const BEARER_DESCRIPTION = [
  'A tenant credential (an atr_… token or a trusted issuer’s JWT) for the tenant routes, an operator credential',
  '(adm_… or an operator’s JWT) for /v1/admin. Each operation lists what it accepts, one requirement per',
  'alternative: any one of the listed scopes (tenant routes) or roles (operator routes) is enough. A credential',
  'without one gets 403 naming them (`required_scopes`; `WWW-Authenticate: Bearer error="insufficient_scope"`).',
  '',
  'Tenant scopes:',
  ...TENANT_SCOPES.map((s) => `- \`${s}\`: ${SCOPE_MEANINGS[s]}`),
  '',
  'Operator roles:',
  ...OPERATOR_ROLES.map((r) => `- \`${r}\`: ${ROLE_MEANINGS[r]}`),
].join('\n');

type Requirement = Record<string, string[]>;

/** Any one of `names` (scopes or roles) is enough: one requirement each (the document's `security` is an OR). */
export const anyOf = (names: readonly string[]): Requirement[] => names.map((n) => ({ [BEARER]: [n] }));

/** What a Nest route declares, as the access guard reads it. */
interface RouteAccess {
  access: Access;
  scopes: readonly TenantScope[] | undefined;
}

const READS = new Set(['get', 'head']);

/** An operation's security requirements from what its route declares; undefined keeps the document's default. */
function requirements(route: RouteAccess, method: string): Requirement[] | undefined {
  switch (route.access) {
    case 'public':
      return [];
    case 'any':
      return [{ [BEARER]: [] }];
    case 'scrape':
      return anyOf(OPERATOR_ROLES);
    case 'admin':
      return anyOf(READS.has(method) ? OPERATOR_ROLES : ['admin']);
    case 'tenant':
      // A tenant route without a scope is refused to everyone (a test keeps there being none).
      return route.scopes?.length ? anyOf(route.scopes) : undefined;
  }
}

const joinPath = (...parts: string[]): string =>
  `/${parts
    .join('/')
    .split('/')
    .filter((s) => s !== '')
    .join('/')}`;

/** Every Nest route as `get /path/{param}`, with the access metadata the guard reads (`AccessGuard`). */
function routeAccess(app: INestApplication): Map<string, RouteAccess> {
  const reflector = new Reflector();
  const out = new Map<string, RouteAccess>();
  for (const wrapper of new DiscoveryService(app.get(ModulesContainer)).getControllers()) {
    const type = wrapper.metatype as (new (...args: never[]) => object) | null;
    if (!type) continue;
    const prefixes = [(Reflect.getMetadata(PATH_METADATA, type) as string | string[] | undefined) ?? '/'].flat();
    const proto = type.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const handler = proto[name];
      if (name === 'constructor' || typeof handler !== 'function') continue;
      const paths = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
      if (paths === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod].toLowerCase();
      const targets = [handler as () => unknown, type];
      const access = reflector.getAllAndOverride<Access | undefined>(ACCESS_KEY, targets) ?? 'tenant';
      const scopes = reflector.getAllAndOverride<TenantScope[] | undefined>(SCOPES_KEY, targets);
      for (const prefix of prefixes) {
        for (const path of [paths].flat()) {
          out.set(`${method} ${joinPath(prefix, path).replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`, { access, scopes });
        }
      }
    }
  }
  return out;
}

/** Sets each Nest route's operation's `security` from the route's `@Public` / `@AdminOnly` / `@RequireScope` …. */
export function documentRouteSecurity(app: INestApplication, doc: OpenAPIObject): void {
  const routes = routeAccess(app);
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item as Record<string, { security?: unknown }>)) {
      const route = routes.get(`${method} ${path}`);
      const security = route && requirements(route, method);
      if (security) op.security = security;
    }
  }
}
