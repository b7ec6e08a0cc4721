import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One POST the receiver got, and what it answered. */
export interface Delivery {
  headers: IncomingHttpHeaders;
  body: any;
  deliveryId: string;
  /** The seq part of the delivery id. */
  seq: number;
  status: number | 'hung';
}

/**
 * A push-notification receiver: a real HTTP server on 127.0.0.1 recording
 * every POST. `mode` picks the answer: `ok` (204), a status code, `hang`
 * (never answers), `redirect` (302 elsewhere). `stop()` closes the port
 * (connections refused) and `start()` opens the same port again.
 */
export class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  mode: 'ok' | 'hang' | 'redirect' | number = 'ok';
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly hung = new Set<ServerResponse>();
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Answered 2xx, in arrival order. */
  get accepted(): Delivery[] {
    return this.deliveries.filter((d) => typeof d.status === 'number' && d.status >= 200 && d.status < 300);
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const deliveryId = String(req.headers['x-arbiter-delivery-id'] ?? '');
        let body: unknown;
        try {
          body = JSON.parse(raw);
        } catch {
          body = raw;
        }
        const d: Delivery = {
          headers: req.headers,
          body,
          deliveryId,
          seq: Number(deliveryId.split(':')[1]),
          status: 0,
        };
        this.deliveries.push(d);
        const mode = this.mode;
        if (mode === 'hang') {
          d.status = 'hung';
          this.hung.add(res);
          return;
        }
        if (mode === 'redirect') {
          d.status = 302;
          res.writeHead(302, { location: `http://127.0.0.1:${this.port}/elsewhere` }).end();
          return;
        }
        d.status = mode === 'ok' ? 204 : mode;
        res.writeHead(d.status).end();
      });
    });
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Closes the port and every connection (a receiver that is down). */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    for (const r of this.hung) r.destroy();
    this.hung.clear();
    for (const sock of this.sockets) sock.destroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}

/**
 * Checks what a receiver accepted against the log's pushable seqs: every one,
 * in order; a repeat only under the same delivery id with the same body.
 */
export function acceptedInOrder(deliveries: Delivery[]): { seqs: number[]; duplicates: number } {
  const byId = new Map<string, string>();
  const seqs: number[] = [];
  let duplicates = 0;
  for (const d of deliveries) {
    const body = JSON.stringify(d.body);
    const seen = byId.get(d.deliveryId);
    if (seen !== undefined) {
      if (seen !== body) throw new Error(`delivery ${d.deliveryId} came twice with different bodies`);
      duplicates++;
      continue;
    }
    byId.set(d.deliveryId, body);
    seqs.push(d.seq);
  }
  return { seqs, duplicates };
}
