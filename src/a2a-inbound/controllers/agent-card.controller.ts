import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { CurrentTenant, Public, type TenantPrincipal, RequireScope } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { AGENT_ID_PATTERN } from '../../registry/constitution.js';
import { AgentCatalog } from '../../registry/services/agent-catalog.service.js';
import { negotiateVersion } from '../version.js';
import { AgentCardService } from '../services/agent-card.service.js';
import { UpstreamCards } from '../services/upstream-card.js';
import { CardSigner, JWKS_PATH } from '../services/card-signer.service.js';
import { cardEtag, etagMatches } from '../services/card-etag.js';
import { CARD_SCOPES } from '../handler/a2a-call.js';
import { ApiTags } from '@nestjs/swagger';
import { AnyQuery } from '../../common/body-reader.interceptor.js';

/** The card with its ETag (see `cardEtag`); a matching `If-None-Match` gets 304. */
function send(req: Request, res: Response, card: unknown, cacheControl: string): void {
  const body = JSON.stringify(card);
  const etag = cardEtag(card, body);
  res.setHeader('ETag', etag);
  res.setHeader('Cache-Control', cacheControl);
  res.append('Vary', 'A2A-Version');
  if (etagMatches(req.headers['if-none-match'], etag)) {
    res.status(304).end();
    return;
  }
  res.status(200).type('application/json').send(body);
}

/**
 * Which card a request asks for: `1.0` when it names 1.0 (`A2A-Version`, header or query), else `compat` — the
 * 1.0 card with v0.3's fields, which a client that names no version (a v0.3 one) reads.
 */
function cardVersion(req: Request): '1.0' | 'compat' {
  const version = negotiateVersion(req.headers['a2a-version'], req.query['A2A-Version']);
  if (typeof version === 'object') {
    throw new DomainError(
      'validation_failed',
      `A2A-Version '${version.unsupported}' is not supported; use 1.0 or 0.3`,
      [{ field: 'A2A-Version', messages: ['must be 1.0 or 0.3'] }],
    );
  }
  const explicit = Boolean(req.headers['a2a-version'] ?? req.query['A2A-Version']);
  return version === '1.0' && explicit ? '1.0' : 'compat';
}

@ApiTags('A2A cards')
@AnyQuery()
@Controller()
export class AgentCardController {
  constructor(
    private readonly cards: AgentCardService,
    private readonly upstreams: UpstreamCards,
    private readonly catalog: AgentCatalog,
    private readonly signer: CardSigner,
  ) {}

  /**
   * The public card (no token): the master agent every tenant has, at one URL for all (see
   * `AgentCardService.wellKnown`). Signed, as every card, when a key is configured.
   */
  @Public()
  @Get('.well-known/agent-card.json')
  async wellKnown(@Req() req: Request, @Res() res: Response): Promise<void> {
    const base = this.cards.baseUrl(req);
    const card = this.cards.wellKnown(base, cardVersion(req));
    // Its URLs are where clients send their tokens: a shared cache may keep it only when they come from the
    // configured base, never from a request's Host (which such a cache may not key on).
    const shared = this.cards.configuredBase ? 'public, max-age=300' : 'private, max-age=60';
    send(req, res, await this.signer.sign(card, base), shared);
  }

  /**
   * The public keys cards are signed with (§8.4.3: what a verifier needs), as a JWK Set: the current key and
   * the previous ones of a rotation; `{"keys": []}` when cards are not signed.
   */
  @Public()
  @Get(JWKS_PATH.slice(1))
  jwks(@Req() req: Request, @Res() res: Response): void {
    send(req, res, this.signer.jwks(), 'public, max-age=300');
  }

  /**
   * The agent's card: v1.0 with `A2A-Version: 1.0`, else the v0.3-readable
   * compatible card. Also where clients look for it from the agent's URL:
   * `<agent url>/.well-known/agent-card.json` (the SDK's `createFromUrl`, the
   * TCK) and the older `<agent url>/.well-known/agent.json`.
   */
  @RequireScope(...CARD_SCOPES)
  @Get([
    'v1/a2a/agents/:id/agent-card.json',
    'v1/a2a/agents/:id/.well-known/agent-card.json',
    'v1/a2a/agents/:id/.well-known/agent.json',
  ])
  async card(
    @CurrentTenant() t: TenantPrincipal,
    @Param('id') id: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const agent = AGENT_ID_PATTERN.test(id) ? await this.catalog.resolve(t.tenantId, id) : null;
    if (!agent) throw DomainError.notFound(`agent '${id.slice(0, 64)}'`);
    const version = cardVersion(req);
    const base = this.cards.baseUrl(req);
    const upstream = await this.upstreams.profile(t.tenantId, agent);
    const card =
      version === '1.0'
        ? await this.cards.v1Card(agent, base, t.tenantId, upstream)
        : await this.cards.compatCard(agent, base, t.tenantId, upstream);
    send(req, res, await this.signer.sign(card, base), 'private, max-age=60');
  }
}
