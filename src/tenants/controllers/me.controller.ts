import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiTags, type SchemaObject } from '@nestjs/swagger';
import { AnyToken, CurrentPrincipal, type Principal } from '../../common/auth.decorators.js';

/** What `GET /v1/me` answers: the kind of token, and for a tenant's its tenant and the token's public id. */
export type MeView =
  { kind: 'admin' } | { kind: 'tenant'; tenant: { id: string; name: string }; token: { id: string; prefix: string } };

const ME_SCHEMA: SchemaObject = {
  oneOf: [
    {
      type: 'object',
      required: ['kind'],
      properties: { kind: { type: 'string', enum: ['admin'] } },
    },
    {
      type: 'object',
      required: ['kind', 'tenant', 'token'],
      properties: {
        kind: { type: 'string', enum: ['tenant'] },
        tenant: {
          type: 'object',
          required: ['id', 'name'],
          properties: { id: { type: 'string' }, name: { type: 'string' } },
        },
        token: {
          type: 'object',
          required: ['id', 'prefix'],
          properties: { id: { type: 'string' }, prefix: { type: 'string', description: 'as in token listings' } },
        },
      },
    },
  ],
};

/**
 * `GET /v1/me`: who the bearer is, for a client (the console) that holds a token and needs the name behind it.
 * It answers for either kind of token and never echoes the token itself.
 */
@AnyToken()
@ApiTags('me')
@Controller('v1/me')
export class MeController {
  @Get()
  @ApiOkResponse({ description: 'the caller', schema: ME_SCHEMA })
  me(@CurrentPrincipal() who: Principal): MeView {
    if ('admin' in who) return { kind: 'admin' };
    return {
      kind: 'tenant',
      tenant: { id: who.tenantId, name: who.tenantName },
      token: { id: who.tokenId, prefix: who.tokenPrefix },
    };
  }
}
