import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JWK } from 'jose';

/** What the fake answers one request with, instead of its documents. */
export type IdpAnswer = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * An identity provider's discovery document and JWK Set, served by a real HTTP server on 127.0.0.1: `jwks`,
 * `discovery` and `answer` may be changed between requests (an IdP that rotates, breaks, stalls …), and it counts
 * requests per path and TCP connections.
 */
export class FakeIdp {
  /** The JWK Set served at `/jwks`. */
  jwks: { keys: JWK[] } = { keys: [] };
  /** The discovery document, by default naming this server as issuer and its `/jwks`. */
  discovery: Record<string, unknown> | null = null;
  /** When set, answers every request. */
  answer: IdpAnswer | null = null;
  connections = 0;
  private readonly hitsByPath = new Map<string, number>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<FakeIdp> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const idp = new FakeIdp(server, (server.address() as AddressInfo).port);
    server.on('connection', () => (idp.connections += 1));
    server.on('request', (req, res) => idp.handle(req, res));
    return idp;
  }

  /** `http://127.0.0.1:<port>`: the issuer. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** `127.0.0.1:<port>`, as the allowlist names it. */
  get hostPort(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Requests so far to `path`, or to any path. */
  hits(path?: string): number {
    if (path !== undefined) return this.hitsByPath.get(path) ?? 0;
    return [...this.hitsByPath.values()].reduce((a, b) => a + b, 0);
  }

  /** Stops listening and drops open connections: afterwards a connection is refused. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    this.hitsByPath.set(path, (this.hitsByPath.get(path) ?? 0) + 1);
    if (this.answer) return this.answer(req, res);
    if (path === '/.well-known/openid-configuration') {
      return json(res, this.discovery ?? { issuer: this.url, jwks_uri: `${this.url}/jwks` });
    }
    if (path === '/jwks') return json(res, this.jwks);
    res.writeHead(404).end();
  }
}

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A loopback port nothing listens on (one that was just closed): connecting to it is refused. */
export async function closedPort(): Promise<number> {
  const idp = await FakeIdp.start();
  await idp.close();
  return idp.port;
}
