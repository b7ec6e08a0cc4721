import { EventEmitter } from 'node:events';
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { parse, PGlite, protocol, types } from '@electric-sql/pglite';
import { StartupError } from './preflight.js';
import { asError } from '../common/errors.js';

type Callback<T> = (err: Error | null, value?: T) => void;

interface PgLikeResult {
  rows: unknown[];
  rowCount: number;
  command: string;
}

/** Options the pool takes (TypeORM passes its own connection options alongside). */
export interface PGlitePoolOptions {
  dataDir?: string;
}

/**
 * One embedded database per data directory per process, shared by every pool
 * that points at it (TypeORM's CLI and the app may both open one).
 */
const instances = new Map<string, { db: Promise<PGlite>; refs: number }>();

/** Thrown when another live process holds the embedded database. */
/** Another process holds the embedded database: a known start-up condition. */
export class EmbeddedDatabaseLockedError extends StartupError {}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * PGlite keeps the database in this process's memory and writes it back to
 * the directory; two processes on one directory would overwrite each other.
 * A lock file beside the directory (`<dataDir>.lock`, holding the owner's
 * pid) makes a second process refuse to start; a lock left by a dead
 * process is taken over.
 */
function lockDataDir(dataDir: string): void {
  const lock = `${dataDir}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx', mode: 0o600 });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = Number.parseInt(readFileSync(lock, 'utf8'), 10);
    if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && processAlive(owner)) {
      throw new EmbeddedDatabaseLockedError(
        `the embedded database ${dataDir} is in use by process ${owner}; stop that process, use another ARBITER_HOME, ` +
          'or set DATABASE_URL to share a PostgreSQL server between processes',
      );
    }
    unlinkSync(lock); // stale: its owner is gone
  }
  throw new EmbeddedDatabaseLockedError(`could not lock the embedded database ${dataDir}`);
}

function unlockDataDir(dataDir: string): void {
  try {
    if (readFileSync(`${dataDir}.lock`, 'utf8') === String(process.pid)) unlinkSync(`${dataDir}.lock`);
  } catch {
    // already gone
  }
}

function acquireInstance(dataDir: string | undefined): Promise<PGlite> {
  const key = dataDir ?? ':memory:';
  let entry = instances.get(key);
  if (!entry) {
    if (dataDir) {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      lockDataDir(dataDir);
    }
    entry = {
      db: PGlite.create({
        dataDir,
        // Match node-postgres: int8 and numeric as strings, so code behaves the
        // same on both engines.
        parsers: { [types.INT8]: (v: string) => v, [types.NUMERIC]: (v: string) => v },
      }),
      refs: 0,
    };
    instances.set(key, entry);
  }
  entry.refs += 1;
  return entry.db;
}

async function releaseInstance(dataDir: string | undefined): Promise<void> {
  const key = dataDir ?? ':memory:';
  const entry = instances.get(key);
  if (!entry) return;
  entry.refs -= 1;
  if (entry.refs > 0) return;
  instances.delete(key);
  try {
    const db = await entry.db;
    if (!db.closed) await db.close();
  } finally {
    if (dataDir) unlockDataDir(dataDir);
  }
}

/** A statement prepared in an embedded database's session: its parameters' types and its rows' description. */
interface Prepared {
  text: string;
  params: number[];
  rows: Awaited<ReturnType<PGlite['execProtocolStream']>>;
}

/** The statements prepared in each embedded database's session (pools on one directory share the session). */
const preparedIn = new WeakMap<PGlite, Map<string, Prepared>>();

/** A node-postgres-shaped client over the single PGlite session. */
class PGliteClient extends EventEmitter {
  constructor(private readonly db: PGlite) {
    super();
  }

  /**
   * A named statement, as node-postgres runs `{ name, text, values }`: parsed and planned once per session, then
   * bound and executed in one call into the database (PGlite's `query` parses, describes, binds and executes in
   * six calls, every time).
   */
  async prepared(name: string, text: string, values: unknown[]): Promise<PgLikeResult> {
    const db = this.db;
    const { serialize } = protocol;
    return db.runExclusive(async () => {
      let statements = preparedIn.get(db);
      if (!statements) preparedIn.set(db, (statements = new Map<string, Prepared>()));
      let statement = statements.get(name);
      if (!statement) {
        const described = await db.execProtocolStream(
          Buffer.concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]),
          { syncToFs: false },
        );
        statement = {
          text,
          params: parse.parseDescribeStatementResults(described),
          rows: described.filter((m) => m.name === 'rowDescription'),
        };
        statements.set(name, statement);
      }
      // As node-postgres: a name stands for one text.
      if (statement.text !== text) throw new Error(`the prepared statement ${name} was prepared with another text`);
      const params = statement.params;
      const bound = values.map((v, i) => {
        if (v === null || v === undefined) return null;
        const serializer = db.serializers[params[i] ?? 0];
        return serializer ? serializer(v) : (v as { toString(): string }).toString(); // as PGlite does
      });
      const messages = await db.execProtocolStream(
        Buffer.concat([serialize.bind({ statement: name, values: bound }), serialize.execute(), serialize.sync()]),
      );
      const [result] = parse.parseResults([...statement.rows, ...messages], db.parsers);
      return {
        rows: result?.rows ?? [],
        rowCount: result?.rowCount ?? result?.affectedRows ?? result?.rows.length ?? 0,
        command: (result as { command?: string } | undefined)?.command ?? commandOf(text),
      };
    });
  }

  async query(sql: string, params?: unknown[]): Promise<PgLikeResult> {
    if (params && params.length > 0) {
      const r = await this.db.query(sql, params);
      return {
        rows: r.rows,
        rowCount: r.rowCount ?? r.affectedRows ?? r.rows.length,
        command: r.command ?? commandOf(sql),
      };
    }
    const all = await this.db.exec(sql);
    const last = all[all.length - 1];
    return {
      rows: last?.rows ?? [],
      rowCount: last?.rowCount ?? last?.affectedRows ?? last?.rows.length ?? 0,
      command: last?.command ?? commandOf(sql),
    };
  }
}

function commandOf(sql: string): string {
  return (/^\s*(\w+)/.exec(sql)?.[1] ?? '').toUpperCase();
}

/**
 * A `pg.Pool` stand-in for TypeORM's postgres driver, backed by embedded
 * PGlite. PGlite has exactly one session, so "connections" are handed out one
 * at a time: a caller holds the session from `connect()` until it releases
 * it. That keeps transactions isolated from each other, which a pool that
 * shares the session between concurrent callers (as `typeorm-pglite` does)
 * cannot. Code must therefore never wait on a second connection while holding
 * one — the same discipline a small real pool needs anyway.
 */
export class PGlitePool extends EventEmitter {
  private readonly dataDir: string | undefined;
  private readonly db: Promise<PGlite>;
  private client: PGliteClient | undefined;
  private busy = false;
  private readonly waiters: (() => void)[] = [];
  private ended = false;

  constructor(options: PGlitePoolOptions = {}) {
    super();
    this.dataDir = options.dataDir;
    try {
      this.db = acquireInstance(this.dataDir);
    } catch (err) {
      this.db = Promise.reject(asError(err));
    }
    // Surface a failed start through connect() rather than an unhandled rejection.
    this.db.catch(() => undefined);
  }

  /** `pg.Pool`'s gauges (one session: total 1; idle when nobody holds it). */
  get totalCount(): number {
    return 1;
  }
  get idleCount(): number {
    return this.busy ? 0 : 1;
  }
  get waitingCount(): number {
    return this.waiters.length;
  }

  connect(): Promise<PGliteClient>;
  connect(cb: (err: Error | null, client?: PGliteClient, release?: (err?: unknown) => void) => void): void;
  connect(
    cb?: (err: Error | null, client?: PGliteClient, release?: (err?: unknown) => void) => void,
  ): Promise<PGliteClient> | void {
    const p = this.acquire();
    if (!cb) return p.then(([client]) => client);
    p.then(
      ([client, release]) => cb(null, client, release),
      (err: Error) => cb(err),
    );
  }

  private async acquire(): Promise<[PGliteClient, (err?: unknown) => void]> {
    if (this.ended) throw new Error('the embedded database pool has been closed');
    const db = await this.db;
    if (this.busy) await new Promise<void>((resolve) => this.waiters.push(resolve));
    else this.busy = true;
    if (this.ended) {
      this.releaseSlot();
      throw new Error('the embedded database pool has been closed');
    }
    this.client ??= new PGliteClient(db);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.releaseSlot();
    };
    return [this.client, release];
  }

  private releaseSlot(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.busy = false;
  }

  /** A named statement (see `PGliteClient.prepared`), without holding the session across calls. */
  async prepared(name: string, text: string, values: unknown[]): Promise<PgLikeResult> {
    const [client, release] = await this.acquire();
    try {
      return await client.prepared(name, text, values);
    } finally {
      release();
    }
  }

  /**
   * Direct query without holding the session across calls, in node-postgres's forms: a text with its values, or
   * `{ name, text, values }`, a named statement (see `prepared`).
   */
  async query(
    config: string | { name?: string; text: string; values?: unknown[] },
    params?: unknown[],
  ): Promise<PgLikeResult> {
    if (typeof config !== 'string' && config.name) return this.prepared(config.name, config.text, config.values ?? []);
    const [client, release] = await this.acquire();
    try {
      if (typeof config === 'string') return await client.query(config, params);
      return await client.query(config.text, params ?? config.values);
    } finally {
      release();
    }
  }

  end(cb?: Callback<void>): Promise<void> | void {
    this.ended = true;
    for (const w of this.waiters.splice(0)) w();
    const p = releaseInstance(this.dataDir);
    if (!cb) return p;
    p.then(
      () => cb(null),
      (err: Error) => cb(err),
    );
  }
}

/** What TypeORM's `driver` option expects: an object with a `Pool` constructor. */
export function pgliteDriver(dataDir: string | undefined): { Pool: new () => PGlitePool } {
  return {
    Pool: class extends PGlitePool {
      constructor() {
        super({ dataDir });
      }
    },
  };
}
