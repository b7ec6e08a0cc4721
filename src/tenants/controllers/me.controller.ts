import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiTags, type SchemaObject } from '@nestjs/swagger';
import { AnyToken, CurrentPrincipal, type Principal } from '../../common/auth.decorators.js';

/** The credential behind a request: an opaque token (id and prefix) or a JWT (issuer id and expiry). */
type CredentialView =
  | { kind: 'token'; id: string; prefix: string }
  | { kind: 'admin_token'; id: string | null }
  | { kind: 'jwt'; issuer_id: string; expires_at: string };

/**
 * What `GET /v1/me` answers: the kind of caller, its actor id (as audit rows
 * and log lines name it), what it may do, and its credential.
 */
export type MeView =
  | { kind: 'admin'; role: 'admin' | 'auditor'; actor: string; credential: CredentialView }
  | {
      kind: 'tenant';
      tenant: { id: string; name: string };
      scopes: string[];
      actor: string;
      credential: CredentialView;
      /** Kept for clients of earlier versions: the opaque token's id and prefix (a JWT: `jwt`). */
      token: { id: string; prefix: string };
    };

const CREDENTIAL: SchemaObject = {
  type: 'object',
  required: ['kind'],
  properties: {
    kind: { type: 'string', enum: ['token', 'admin_token', 'jwt'] },
    id: { type: 'string', nullable: true },
    prefix: { type: 'string' },
    issuer_id: { type: 'string' },
    expires_at: { type: 'string', format: 'date-time' },
  },
};

const ME_SCHEMA: SchemaObject = {
  oneOf: [
    {
      type: 'object',
      required: ['kind', 'role', 'actor', 'credential'],
      properties: {
        kind: { type: 'string', enum: ['admin'] },
        role: { type: 'string', enum: ['admin', 'auditor'] },
        actor: { type: 'string' },
        credential: CREDENTIAL,
      },
    },
    {
      type: 'object',
      required: ['kind', 'tenant', 'scopes', 'actor', 'credential', 'token'],
      properties: {
        kind: { type: 'string', enum: ['tenant'] },
        tenant: {
          type: 'object',
          required: ['id', 'name'],
          properties: { id: { type: 'string' }, name: { type: 'string' } },
        },
        scopes: { type: 'array', items: { type: 'string' } },
        actor: { type: 'string' },
        credential: CREDENTIAL,
        token: {
          type: 'object',
          required: ['id', 'prefix'],
          properties: { id: { type: 'string' }, prefix: { type: 'string', description: 'as in token listings' } },
        },
      },
    },
  ],
};

const jwtCredential = (jwt: { issuerId: string; expiresAt: number }): CredentialView => ({
  kind: 'jwt',
  issuer_id: jwt.issuerId,
  expires_at: new Date(jwt.expiresAt).toISOString(),
});

/**
 * `GET /v1/me`: who the bearer is, for a client (the console) that holds a
 * credential and needs the name behind it and what it may do. It answers
 * for any credential and never echoes it.
 */
@AnyToken()
@ApiTags('me')
@Controller('v1/me')
export class MeController {
  @Get()
  @ApiOkResponse({ description: 'the caller', schema: ME_SCHEMA })
  me(@CurrentPrincipal() who: Principal): MeView {
    if ('admin' in who) {
      return {
        kind: 'admin',
        role: who.role,
        actor: who.actor,
        credential: who.jwt ? jwtCredential(who.jwt) : { kind: 'admin_token', id: who.operatorId ?? null },
      };
    }
    return {
      kind: 'tenant',
      tenant: { id: who.tenantId, name: who.tenantName },
      scopes: [...who.scopes],
      actor: who.actor,
      credential: who.jwt ? jwtCredential(who.jwt) : { kind: 'token', id: who.tokenId, prefix: who.tokenPrefix },
      token: { id: who.tokenId, prefix: who.tokenPrefix },
    };
  }
}
