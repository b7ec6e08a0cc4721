import { createServer as createHttps } from 'node:https';
import { createServer as createHttp, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import express from 'express';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';
import { card, voltExecutor } from './peer-agents.js';

/** What the remote saw of one JSON-RPC request: the verified claims, or the header, or the client certificate. */
export interface Seen {
  status: number;
  claims?: JWTPayload;
  header?: string;
  peerCn?: string;
}

export interface GuardedAgentOptions {
  /** Bearer JWTs of this IdP (JWKS) for `audience`, verified with jose. */
  jwt?: { jwksUri: string; issuer: string; audience: string };
  /** An API key in a named header. */
  header?: { name: string; value: string };
  /** HTTPS that requires a client certificate signed by `ca`. */
  tls?: { key: string; cert: string; ca: string };
}

/**
 * A remote A2A agent on loopback (the official SDK's server, answering "<name> heard: <input>") that guards its
 * JSON-RPC endpoint — the card stays public — with a bearer JWT verified against an IdP's keys, an API key
 * header, or a client certificate (mTLS). `revoke` makes it refuse one token from then on, `refuse = 'all'` every
 * token; `holdRefusals` holds 401 answers until that many requests have arrived, so that a
 * fan-out's calls all carry the same token before any of them hears the refusal.
 */
export class GuardedAgent {
  readonly seen: Seen[] = [];
  url = '';
  /** Refuse every token it would accept (`'all'`), or only revoked ones (`0`). */
  refuse: 'all' | 0 = 0;
  holdRefusals = 0;
  private readonly refusedTokens = new Set<string>();
  private readonly held: (() => void)[] = [];
  private server: Server | undefined;

  constructor(
    readonly name: string,
    private readonly opts: GuardedAgentOptions,
  ) {}

  /** From now on, the token with this `jti` is refused (revoked). */
  revoke(jti: string): void {
    this.refusedTokens.add(jti);
  }

  /** Distinct tokens (`jti`) the remote was sent. */
  get tokens(): string[] {
    return [...new Set(this.seen.flatMap((s) => (s.claims?.jti ? [s.claims.jti] : [])))];
  }

  async start(): Promise<void> {
    const app = express();
    const tls = this.opts.tls;
    const server = tls
      ? createHttps({ key: tls.key, cert: tls.cert, ca: tls.ca, requestCert: true, rejectUnauthorized: true }, app)
      : createHttp(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.url = `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const jwks = this.opts.jwt ? createRemoteJWKSet(new URL(this.opts.jwt.jwksUri)) : undefined;
    const handler = new DefaultRequestHandler(
      card(this.name, 'A guarded agent', `${this.url}/`, 'secure'),
      new InMemoryTaskStore(),
      voltExecutor(this.name),
    );
    app.use('/.well-known/agent-card.json', legacyAgentCardRouter({ agentCardProvider: handler }));
    app.post('/', (req, res, next) => {
      void this.check(req, jwks).then((seen) => {
        this.seen.push(seen);
        if (seen.status === 200) return next();
        const answer = (): void => {
          res.status(seen.status).set('www-authenticate', 'Bearer error="invalid_token"').json({ error: 'refused' });
        };
        if (this.holdRefusals > 0) {
          this.held.push(answer);
          if (this.held.length >= this.holdRefusals) {
            this.holdRefusals = 0;
            for (const a of this.held.splice(0)) a();
          }
          return;
        }
        answer();
      });
    });
    app.use(
      '/',
      jsonRpcHandler({
        requestHandler: handler,
        userBuilder: UserBuilder.noAuthentication,
        legacyCompat: { enabled: true },
      }),
    );
  }

  private async check(req: IncomingMessage, jwks: ReturnType<typeof createRemoteJWKSet> | undefined): Promise<Seen> {
    if (this.opts.tls) {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      return { status: 200, peerCn: typeof peer.subject?.CN === 'string' ? peer.subject.CN : '' };
    }
    if (this.opts.header) {
      const got = req.headers[this.opts.header.name.toLowerCase()];
      return { status: got === this.opts.header.value ? 200 : 401, header: String(got ?? '') };
    }
    const jwt = this.opts.jwt;
    if (!jwt || !jwks) return { status: 200 };
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token) return { status: 401 };
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, jwks, { issuer: jwt.issuer, audience: jwt.audience }));
    } catch {
      return { status: 401 };
    }
    const jti = String(claims.jti);
    if (this.refuse === 'all') return { status: 401, claims };
    return { status: this.refusedTokens.has(jti) ? 401 : 200, claims };
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server) return resolve();
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}
