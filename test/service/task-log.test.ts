import '../helpers/quiet.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { PGlite } from '@electric-sql/pglite';
import { Test, type TestingModule } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import pg from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';
import type { MessageJson } from '../../src/common/a2a-json.js';
import { DomainError } from '../../src/common/errors.js';
import { loadConfig } from '../../src/config/app-config.js';
import { ConfigModule } from '../../src/config/config.module.js';
import { DatabaseModule } from '../../src/database/database.module.js';
import { InstanceIdentity } from '../../src/database/instance-identity.js';
import { ENTITIES } from '../../src/entities.js';
import { Metrics } from '../../src/metrics/metrics.service.js';
import { EventReads } from '../../src/tasks/repositories/event-reads.repository.js';
import { TaskLogWriter } from '../../src/tasks/repositories/task-log.writer.js';
import { StatsRecorder } from '../../src/stats/stats-recorder.service.js';
import { UsageMeter } from '../../src/usage/usage-meter.js';
import type { NewTask } from '../../src/tasks/repositories/task-log.types.js';
import { FIND_MANY, TaskReads } from '../../src/tasks/repositories/task-reads.repository.js';
import { Params } from '../../src/database/sql-params.js';
import { APPEND, appendRecord } from '../../src/tasks/statements/append.sql.js';
import { endManySql } from '../../src/tasks/statements/end.sql.js';
import { readNotice, TASK_EVENTS_CHANNEL } from '../../src/tasks/statements/notify.sql.js';
import type { TaskEventBody } from '../../src/tasks/task-events.js';
import { freshDatabase, REAL_POSTGRES, seedEmbeddedDatabase, type TestDatabase } from '../helpers/database.js';
import { within } from '../helpers/patience.js';
import { tempHome } from '../helpers/server.js';

const ts = (): string => new Date().toISOString();
const status = (state: string, extra: Record<string, unknown> = {}): TaskEventBody =>
  ({ kind: 'status', payload: { state, timestamp: ts(), ...extra } }) as TaskEventBody;
const usage = (n: number): TaskEventBody => ({ kind: 'usage', payload: { inputTokens: n, outputTokens: n } });
const userMessage = (text: string): MessageJson => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] });

/** The notices the writes send on the task log's channel, as a queue a test waits on. */
class Notices {
  readonly heard: string[] = [];
  private waiter: (() => void) | undefined;

  hear(payload: string): void {
    this.heard.push(payload);
    this.waiter?.();
  }

  /** The next notice that names any of `taskIds` (waits for it); notices about other tasks are passed over. */
  async next(taskIds: string[]): Promise<string> {
    for (;;) {
      while (this.heard.length === 0) await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = undefined;
      const payload = this.heard.shift()!;
      if (taskIds.some((id) => payload.includes(id))) return payload;
    }
  }
}

/**
 * The task log's one writer (`TaskLogWriter`) with the real repositories on
 * the database, built by Nest's testing module without the HTTP server or
 * the runs: what each write commits, in which order, what it tells the
 * other replicas, and what it refuses.
 */
describe(`task log writer (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let db: TestDatabase;
  let home: string;
  let moduleRef: TestingModule;
  let ds: DataSource;
  let writer: TaskLogWriter;
  let reads: TaskReads;
  let events: EventReads;
  let self: string;
  let listener: pg.Client | undefined;
  const notices = new Notices();

  before(async () => {
    db = await freshDatabase();
    home = tempHome();
    if (!db.url) seedEmbeddedDatabase(home);
    const config = loadConfig({
      ARBITER_HOME: home,
      LOG_LEVEL: 'silent',
      ...(db.url ? { DATABASE_URL: db.url } : {}),
    });
    moduleRef = await Test.createTestingModule({
      imports: [ConfigModule.forRoot(config), DatabaseModule.forRoot(ENTITIES)],
      providers: [Metrics, EventReads, TaskReads, TaskLogWriter, UsageMeter, StatsRecorder],
    }).compile();
    ds = moduleRef.get<DataSource>(getDataSourceToken());
    writer = moduleRef.get(TaskLogWriter);
    reads = moduleRef.get(TaskReads);
    events = moduleRef.get(EventReads);
    self = moduleRef.get(InstanceIdentity).id;
    if (db.url) {
      // Another session listening, as another replica's notice connection does.
      listener = new pg.Client({ connectionString: db.url });
      await listener.connect();
      listener.on('notification', (n) => notices.hear(n.payload ?? ''));
      await listener.query(`LISTEN ${TASK_EVENTS_CHANNEL}`);
    } else {
      // The embedded database has one session: it hears its own notices, on commit.
      const pool = (ds.driver as unknown as { master: { db: Promise<PGlite> } }).master;
      await (await pool.db).listen(TASK_EVENTS_CHANNEL, (payload) => notices.hear(payload));
    }
  });
  after(async () => {
    await listener?.end();
    await moduleRef.close();
    await db.drop();
    rmSync(home, { recursive: true, force: true });
  });

  const newTenant = async (): Promise<string> => {
    const id = randomUUID();
    await ds.query(`INSERT INTO tenants (id, name) VALUES ($1, $2)`, [id, `t-${id.slice(0, 8)}`]);
    return id;
  };
  const lease = () => ({ owner: self, ms: 60_000 });
  const task = (tenantId: string, runningCap = 0): NewTask => {
    const taskId = randomUUID();
    return {
      taskId,
      messageId: `m-${taskId}`,
      messageHash: 'h',
      runningCap,
      tenantId,
      agentId: 'a',
      contextId: 'c',
      metadata: {},
    };
  };
  /** A new task in `working`, its first events as `TaskIntake.create` writes them. */
  const create = (t: NewTask) =>
    writer.create(
      t,
      [
        status('TASK_STATE_SUBMITTED'),
        {
          kind: 'message',
          payload: { message: { ...userMessage('hello'), taskId: t.taskId, contextId: t.contextId } },
        },
        status('TASK_STATE_WORKING'),
      ],
      'TASK_STATE_WORKING',
      lease(),
    );
  const askFor = (t: NewTask, inputsUpTo: number) => {
    const question: MessageJson = { messageId: randomUUID(), role: 'ROLE_AGENT', parts: [{ text: 'which one?' }] };
    return writer.append(t.taskId, [status('TASK_STATE_INPUT_REQUIRED', { message: question })], {
      state: 'TASK_STATE_INPUT_REQUIRED',
      lease: null,
      statusMessage: question,
      historyAppend: [question],
      inputsUpTo,
    });
  };
  const kinds = async (t: NewTask) =>
    (await events.events(t.tenantId, t.taskId, 0)).map((e) => [
      e.seq,
      e.kind === 'status' ? `status:${e.payload.state.replace('TASK_STATE_', '').toLowerCase()}` : e.kind,
    ]);

  it('create, append, continue and end from outside write one gap-free log, in the order written', async () => {
    const tenant = await newTenant();
    const t = task(tenant);
    assert.deepEqual(
      (await create(t)).map((e) => e.seq),
      [1, 2, 3],
    );
    assert.deepEqual(
      (await writer.append(t.taskId, [usage(1)]))?.events.map((e) => e.seq),
      [4],
    );
    const asked = await askFor(t, 2);
    assert.equal(asked?.row?.state, 'TASK_STATE_INPUT_REQUIRED');
    // The interrupted task resumes: the message and `working`, leased to this replica, which starts its run.
    const message = { ...userMessage('the second'), taskId: t.taskId, contextId: t.contextId };
    const resumed = await writer.continueWith(tenant, t.taskId, message, status('TASK_STATE_WORKING'), lease());
    assert.ok(resumed);
    assert.equal(resumed.started, true);
    assert.deepEqual(
      resumed.events.map((e) => [e.seq, e.kind]),
      [
        [6, 'message'],
        [7, 'status'],
      ],
    );
    assert.deepEqual(
      resumed.row.history.map((m) => m.parts[0]?.text),
      ['hello', 'which one?'],
      'what the new run starts from: the history before this message',
    );
    // A message to a running task is only added: its run takes it from the log.
    const more = await writer.continueWith(
      tenant,
      t.taskId,
      { ...message, messageId: randomUUID() },
      status('TASK_STATE_WORKING'),
      lease(),
    );
    assert.equal(more?.started, false);
    assert.deepEqual(
      more?.events.map((e) => [e.seq, e.kind]),
      [[8, 'message']],
    );
    const ended = await writer.endBatch(
      { kind: 'task', tenantId: tenant, taskId: t.taskId },
      { state: 'TASK_STATE_CANCELED', error: 'canceled by client', timestamp: ts() },
      500,
      (row) => row.artifacts,
    );
    assert.deepEqual(
      ended.ended.map((e) => [e.seq, e.kind]),
      [[9, 'status']],
    );
    assert.deepEqual(await kinds(t), [
      [1, 'status:submitted'],
      [2, 'message'],
      [3, 'status:working'],
      [4, 'usage'],
      [5, 'status:input_required'],
      [6, 'message'],
      [7, 'status:working'],
      [8, 'message'],
      [9, 'status:canceled'],
    ]);
    const row = await reads.find(tenant, t.taskId);
    assert.equal(row?.state, 'TASK_STATE_CANCELED');
    assert.equal(row?.lastSeq, 9);
    assert.deepEqual(
      row?.history.map((m) => m.parts[0]?.text),
      ['hello', 'which one?', 'the second', 'the second'],
    );
    const [held] = await ds.query<{ owner: string | null }[]>(
      `SELECT owner_instance AS owner FROM a2a_tasks WHERE task_id = $1`,
      [t.taskId],
    );
    assert.equal(held?.owner, null, 'an end releases the lease');
  });

  it('a creation with its answer merged in stores the same row as the answer written after it, sizes exact', async () => {
    const tenant = await newTenant();
    // `carried`: the status event carries the very reply the row keeps (the creation sends it once, the row's
    // copies refer to the event); else an equal copy, and the creation sends the row's reply itself.
    for (const [merged, carried] of [
      [true, true],
      [true, false],
      [false, true],
    ]) {
      const t = task(tenant);
      const reply: MessageJson = {
        messageId: randomUUID(),
        role: 'ROLE_AGENT',
        parts: [{ text: 'done' }],
        taskId: t.taskId,
        contextId: t.contextId,
      };
      const answer = () =>
        writer.append(t.taskId, [status('TASK_STATE_COMPLETED', { message: carried ? reply : { ...reply } })], {
          state: 'TASK_STATE_COMPLETED',
          lease: null,
          statusMessage: reply,
          historyAppend: [reply],
        });
      const created = create(t);
      // Asked before the creation's statement is sent, the answer joins it (one statement); else it follows it.
      const answered = merged ? answer() : created.then(answer);
      await created;
      assert.equal((await answered)?.row?.state, 'TASK_STATE_COMPLETED');
      const [row] = await ds.query<
        { history: MessageJson[]; status: MessageJson; hb: number; hbNow: number; eb: number; ebNow: number }[]
      >(
        `SELECT history, status_message AS status, history_bytes AS hb, octet_length(history::text) AS "hbNow",
                extra_bytes AS eb, octet_length(metadata::text) + octet_length(status_message::text) AS "ebNow"
           FROM a2a_tasks WHERE task_id = $1`,
        [t.taskId],
      );
      const how = `${merged ? 'merged' : 'written after'}${carried ? '' : ', reply not carried'}`;
      assert.deepEqual(
        row.history.map((m) => [m.role, m.parts[0]?.text, m.taskId]),
        [
          ['ROLE_USER', 'hello', t.taskId],
          ['ROLE_AGENT', 'done', t.taskId],
        ],
        how,
      );
      assert.deepEqual(row.status, reply, how);
      assert.equal(Number(row.eb), Number(row.ebNow), how);
      // One statement measures the whole history; an append adds its part's size to the creation's.
      if (merged) assert.equal(Number(row.hb), Number(row.hbNow));
    }
  });

  it('notices: each write that adds events sends one on commit, naming its tasks and last seqs, in this replica’s name', async () => {
    const tenant = await newTenant();
    const [a, b, c] = [task(tenant), task(tenant), task(tenant)];
    const ours = [a.taskId, b.taskId, c.taskId];
    // Neither a creation (nobody can watch a task before it exists) nor a refused append sends one.
    await Promise.all([create(a), create(b), create(c)]);
    await writer.append(c.taskId, [status('TASK_STATE_FAILED')], { state: 'TASK_STATE_FAILED', lease: null });
    assert.equal(await within(notices.next(ours), 'the first notice'), `${self}|${c.taskId}|4`);
    assert.equal(await writer.append(c.taskId, [usage(1)]), null);
    // Appends of two tasks in the same tick: one statement, one notice for both.
    const before = writer.batches.statements;
    await Promise.all([writer.append(a.taskId, [usage(1)]), writer.append(b.taskId, [usage(2), usage(3)])]);
    assert.equal(writer.batches.statements - before, 1);
    const grouped = await within(notices.next(ours), 'the group commit’s notice');
    const [instance, ...pairs] = grouped.split('|');
    assert.equal(instance, self);
    const named = new Map<string, number>();
    for (let k = 0; k < pairs.length; k += 2) named.set(pairs[k], Number(pairs[k + 1]));
    assert.deepEqual(
      named,
      new Map([
        [a.taskId, 4],
        [b.taskId, 5],
      ]),
    );
    // The notice is read back as it was written; a replica's own notices are its own business.
    const read: [string, number][] = [];
    readNotice(grouped, 'another-replica', (taskId, seq) => read.push([taskId, seq]));
    assert.deepEqual(new Map(read), named);
    readNotice(grouped, self, () => assert.fail('a replica acts on its own notice'));

    await askFor(a, 2);
    assert.equal(await within(notices.next(ours), 'the settle’s notice'), `${self}|${a.taskId}|5`);
    const message = { ...userMessage('again'), taskId: a.taskId, contextId: a.contextId };
    await writer.continueWith(tenant, a.taskId, message, status('TASK_STATE_WORKING'), lease());
    assert.equal(await within(notices.next(ours), 'the continuation’s notice'), `${self}|${a.taskId}|7`);
    // An end of many tasks: one notice per task ended.
    const ended = await writer.endBatch(
      { kind: 'tenant', tenantId: tenant },
      { state: 'TASK_STATE_CANCELED', error: 'tenant disabled', timestamp: ts() },
      500,
      (row) => row.artifacts,
    );
    assert.equal(ended.ended.length, 2);
    const ends = [
      await within(notices.next(ours), 'an end’s notice'),
      await within(notices.next(ours), 'an end’s notice'),
    ];
    assert.deepEqual(ends.sort(), [`${self}|${a.taskId}|8`, `${self}|${b.taskId}|6`].sort());
  });

  it('a terminal end is written exactly once: racing ends, a late settle and a second end write nothing more', async () => {
    const tenant = await newTenant();
    const t = task(tenant);
    const other = task(tenant);
    await Promise.all([create(t), create(other)]);
    const end = (error: string) =>
      writer.endBatch(
        { kind: 'task', tenantId: tenant, taskId: t.taskId },
        { state: 'TASK_STATE_CANCELED', error, timestamp: ts() },
        500,
        (row) => row.artifacts,
      );
    const [first, second] = await Promise.all([end('first'), end('second')]);
    assert.equal(first.ended.length + second.ended.length, 1, 'one of the two ended it');
    const reply: MessageJson = { messageId: randomUUID(), role: 'ROLE_AGENT', parts: [{ text: 'done' }] };
    const late = await writer.append(t.taskId, [status('TASK_STATE_COMPLETED', { message: reply })], {
      state: 'TASK_STATE_COMPLETED',
      statusMessage: reply,
      historyAppend: [reply],
    });
    assert.equal(late, null, 'a run settling after the end writes nothing');
    assert.equal(
      await writer.continueWith(tenant, t.taskId, userMessage('more'), status('TASK_STATE_WORKING'), lease()),
      null,
    );
    assert.deepEqual((await end('third')).ended, []);
    const log = await kinds(t);
    assert.deepEqual(log.slice(3), [[4, 'status:canceled']]);
    const row = await reads.find(tenant, t.taskId);
    assert.equal(row?.errorMessage, first.ended.length ? 'first' : 'second');
    assert.equal((await reads.find(tenant, other.taskId))?.state, 'TASK_STATE_WORKING', 'the scope held one task');
  });

  it('the running-task cap: creations in one statement are admitted in submission order, the rest refused; a resume waits for room', async () => {
    const tenant = await newTenant();
    const cap = 2;
    const tasks = [task(tenant, cap), task(tenant, cap), task(tenant, cap)];
    const before = writer.batches.statements;
    const outcomes = await Promise.allSettled(tasks.map((t) => create(t)));
    assert.equal(writer.batches.statements - before, 1, 'one statement decided all three');
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'fulfilled', 'rejected'],
    );
    const refusal = (outcomes[2] as PromiseRejectedResult).reason as unknown;
    assert.ok(refusal instanceof DomainError);
    assert.equal(refusal.code, 'rate_limited');
    assert.match(refusal.message, /running-task cap reached: this tenant may run 2 tasks at once/);
    assert.equal(await reads.find(tenant, tasks[2].taskId), null, 'the refused task wrote nothing');
    assert.deepEqual(await events.events(tenant, tasks[2].taskId, 0), []);
    // At the cap, a new task is refused too, and so is an interrupted task resuming; a message to a running one is not.
    await assert.rejects(
      create(task(tenant, cap)),
      (err: unknown) => err instanceof DomainError && err.code === 'rate_limited',
    );
    const [a, b] = tasks as [NewTask, NewTask];
    await askFor(a, 2);
    const paused = task(tenant, cap);
    await create(paused);
    await askFor(paused, 2);
    const resume = (t: NewTask) =>
      writer.continueWith(
        tenant,
        t.taskId,
        { ...userMessage('go on'), taskId: t.taskId, contextId: t.contextId },
        status('TASK_STATE_WORKING'),
        lease(),
        [],
        cap,
      );
    assert.ok(await resume(a), 'one place free (b runs): a resumes into it');
    assert.equal(await resume(paused), null, 'at the cap: nothing written');
    assert.equal((await reads.find(tenant, paused.taskId))?.state, 'TASK_STATE_INPUT_REQUIRED');
    assert.ok(await resume(b), 'a running task takes a message whatever the cap');
    await writer.endBatch(
      { kind: 'task', tenantId: tenant, taskId: a.taskId },
      { state: 'TASK_STATE_CANCELED', error: 'x', timestamp: ts() },
      500,
      (row) => row.artifacts,
    );
    const resumed = await resume(paused);
    assert.equal(resumed?.started, true, 'with room again, it resumes');
  });
  it('a task created already answered starts no run: at the cap it is admitted, and the count stays', async () => {
    const tenant = await newTenant();
    const cap = 1;
    await create(task(tenant, cap));
    const t = task(tenant, cap);
    const reply: MessageJson = { messageId: randomUUID(), role: 'ROLE_AGENT', parts: [{ text: 'done' }] };
    const created = create(t);
    // Asked before the creation's statement is sent, the answer joins it: the task is created completed.
    const answered = writer.append(t.taskId, [status('TASK_STATE_COMPLETED', { message: reply })], {
      state: 'TASK_STATE_COMPLETED',
      lease: null,
      statusMessage: reply,
      historyAppend: [reply],
    });
    await created;
    assert.equal((await answered)?.row?.state, 'TASK_STATE_COMPLETED');
    assert.equal((await reads.find(tenant, t.taskId))?.state, 'TASK_STATE_COMPLETED');
    const running = async () =>
      (await ds.query<{ running: number }[]>(`SELECT running FROM tenant_running WHERE tenant_id = $1`, [tenant]))[0]
        ?.running;
    assert.equal(await running(), 1, 'only the running task counts');
    await assert.rejects(
      create(task(tenant, cap)),
      (err: unknown) => err instanceof DomainError && err.code === 'rate_limited',
      'a task that would run is still refused',
    );
    assert.equal(await running(), 1);
  });

  it('appends, ends and lookups of many tasks find their tasks by key, not by reading every task', async () => {
    // Enough tasks that a scan of them all is the plan a planner picks when it takes the statement's items for
    // a hundred rows (its guess for a function's rows): with the ids also given as an array, it looks them up.
    const tenant = await newTenant();
    await ds.query(
      `INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, history, metadata, last_seq,
                              last_input_seq, message_id, message_hash, error_message, artifacts, input_tokens,
                              output_tokens, history_bytes, artifacts_bytes, extra_bytes)
       SELECT 'bulk-' || g, $1, 'a', 'c', 'TASK_STATE_COMPLETED', now(), '[]', '{}', 1, 1, 'bulk-' || g, 'h', '',
              '[]', 0, 0, 2, 2, 2
         FROM generate_series(1, 5000) AS g`,
      [tenant],
    );
    await ds.query('ANALYZE a2a_tasks');
    const t = task(tenant);
    await create(t);
    const scans = async (text: string, values: unknown[], runner?: QueryRunner): Promise<string[]> => {
      const [row] = await (runner ?? ds).query(`EXPLAIN (FORMAT JSON) ${text}`, values);
      const found: string[] = [];
      const walk = (node: Record<string, unknown>): void => {
        if (node['Relation Name'] === 'a2a_tasks') found.push(String(node['Node Type']));
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
      };
      const plan = row['QUERY PLAN'];
      walk((typeof plan === 'string' ? JSON.parse(plan) : plan)[0].Plan);
      return found;
    };
    const append = await scans(APPEND.text, [JSON.stringify([appendRecord(0, t.taskId, [usage(1)], {})]), self]);
    assert.ok(append.length > 0, 'the append reads a2a_tasks');
    assert.ok(!append.includes('Seq Scan'), `the append's plan reads a2a_tasks by ${append.join(', ')}`);
    const p = new Params();
    const end = await scans(
      endManySql(
        { kind: 'task', tenantId: tenant, taskId: t.taskId },
        [{ taskId: t.taskId, artifacts: [] }],
        { state: 'TASK_STATE_CANCELED', error: 'x', timestamp: ts() },
        self,
        p,
      ),
      p.values,
    );
    assert.ok(end.length > 0, 'the end reads a2a_tasks');
    assert.ok(!end.includes('Seq Scan'), `the end's plan reads a2a_tasks by ${end.join(', ')}`);
    // Lookups by id, batched: one probe per pair, also in the plan a connection may cache for every batch size.
    const runner = ds.createQueryRunner();
    try {
      for (const mode of ['auto', 'force_generic_plan']) {
        await runner.query(`SET plan_cache_mode = ${mode}`);
        const many = await scans(
          FIND_MANY.text,
          [
            [t.taskId, 'bulk-7', 'bulk-9'],
            [tenant, tenant, tenant],
          ],
          runner,
        );
        assert.ok(many.length > 0, 'the lookup reads a2a_tasks');
        assert.ok(!many.includes('Seq Scan'), `the lookup's plan (${mode}) reads a2a_tasks by ${many.join(', ')}`);
      }
      await runner.query('RESET plan_cache_mode');
    } finally {
      await runner.release();
    }
    await ds.query(`DELETE FROM a2a_tasks WHERE tenant_id = $1`, [tenant]);
  });
});
