import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy the test owns, in front of the shared PostgreSQL server: `cut()`
 * drops every connection and refuses new ones (the database "goes away"),
 * `restore()` accepts again on the same port. The shared server is never touched.
 */
export class TcpProxy {
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((r) => this.server.listen(port, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Every open connection is reset; new ones are refused until `restore()`. */
  async cut(): Promise<void> {
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
    await closed;
  }

  async restore(): Promise<void> {
    await this.start(this.port);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server.listening ? this.server.close(() => r()) : r()));
  }
}
