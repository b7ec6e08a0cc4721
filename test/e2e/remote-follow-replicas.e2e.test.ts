// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { GetTaskRequest, SubscribeToTaskRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { HttpClient } from '../helpers/http.js';
import { readSse, textMessage, v1Client, waitFor } from '../helpers/a2a.js';
import { TIMEOUT_SCALE } from '../helpers/patience.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { tempHome } from '../helpers/server.js';
import { startUpstream, type Upstream } from '../helpers/upstream-agent.js';

/** Short, so that a dead replica's tasks are taken over soon; the waits below are on signals, never on sleeps. */
const LEASE_MS = Math.round(3_000 * TIMEOUT_SCALE);

const textOf = (parts: { content?: { $case: string; value?: unknown } }[] | undefined): string =>
  (parts ?? []).map((p) => (p.content?.$case === 'text' ? String(p.content.value) : '')).join('');

/** A stream's events as they arrive, and its end (a stream cut by a dead replica ends with its error). */
function collect(stream: AsyncGenerator<StreamResponse>): { seen: StreamResponse[]; ended: Promise<unknown> } {
  const seen: StreamResponse[] = [];
  const ended = (async () => {
    try {
      for await (const ev of stream) seen.push(ev);
      return undefined;
    } catch (err) {
      return err;
    }
  })();
  return { seen, ended };
}

/**
 * Gateway mode under Arbiter's own faults: two replicas (child processes) on PostgreSQL follow an upstream
 * built on the official SDK (in-memory store) whose task the test paces. The replica following it is killed;
 * the other takes the task over, reconciles with the upstream and follows it on — the log has every upstream
 * event once, in order, with no gap — and a task whose upstream lost it meanwhile ends failed saying so.
 */
describe(
  `remote-backed tasks survive the replica following them (ARBITER_LEASE_MS=${LEASE_MS})`,
  { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
  () => {
    let db: TestDatabase;
    let up: Upstream;
    let a: ServerProcess;
    let b: ServerProcess;
    let token: string;
    const homes = [tempHome(), tempHome()];
    const admin = `adm_${'f'.repeat(40)}`;
    const secrets = randomBytes(32).toString('base64');
    let env: (home: string) => Record<string, string>;

    before(async () => {
      db = await freshDatabase();
      up = await startUpstream();
      env = (home) => ({
        ARBITER_HOME: home,
        ARBITER_ADMIN_TOKEN: admin,
        DATABASE_URL: db.url!,
        ARBITER_DEFAULT_MODEL: 'echo',
        ARBITER_LEASE_MS: String(LEASE_MS),
        ARBITER_A2A_ALLOW_PRIVATE: 'true',
        ARBITER_SECRETS_KEY: secrets,
      });
      [a, b] = await Promise.all([startServerProcess(env(homes[0])), startServerProcess(env(homes[1]))]);
      const created = await new HttpClient(b.url).withToken(admin).post('/v1/admin/tenants', { name: 'follow' });
      token = created.body.token.token as string;
      const client = new HttpClient(b.url).withToken(token);
      assert.equal((await client.post('/v1/remote-agents', { name: 'vendor', url: `${up.url}/rpc` })).status, 201);
      assert.equal((await client.post('/v1/agents', { id: 'gw', backend: { remote: 'vendor' } })).status, 201);
    });
    after(async () => {
      await a?.stop('SIGTERM');
      await b?.stop('SIGTERM');
      await up?.close();
      await db?.drop();
      for (const h of homes) rmSync(h, { recursive: true, force: true });
    });

    /** The task's whole log from a replica, as [seq, what] pairs. */
    const logOf = async (server: ServerProcess, taskId: string) => {
      const log = await fetch(`${server.url}/v1/requests/${taskId}/events?format=log`, {
        headers: { authorization: `Bearer ${token}` },
      }).then(readSse);
      return log.events.map((e) => {
        const d = e.data;
        const what =
          e.event === 'status'
            ? `status ${String(d.state).replace('TASK_STATE_', '')}${d.message ? ` "${d.message.parts.map((p: { text?: string }) => p.text ?? '').join('')}"` : ''}`
            : e.event === 'artifact'
              ? `artifact ${d.artifact.artifactId} ${d.append ? '+' : '='}"${d.artifact.parts.map((p: { text?: string }) => p.text ?? '').join('')}"${d.lastChunk ? ' last' : ''}`
              : e.event === 'message'
                ? `message ${d.message.role} "${d.message.parts.map((p: { text?: string }) => p.text ?? '').join('')}"`
                : String(e.event);
        return [Number(e.id), what] as const;
      });
    };

    it('a replica killed while following: the other takes over, the caller resumes there, every upstream event is logged once, in order', async () => {
      const onA = await v1Client(a.url, token, 'gw');
      const first = collect(onA.sendMessageStream(textMessage('script')));
      // Phase 1 and 2 while A follows: the caller sees them live from A.
      const sees = (what: (ev: StreamResponse) => boolean) =>
        waitFor(() => Promise.resolve(first.seen.some(what) ? true : undefined));
      const says = (words: string) => (ev: StreamResponse) =>
        ev.payload?.$case === 'statusUpdate' && textOf(ev.payload.value.status?.message?.parts) === words;
      up.step();
      await sees(says('step one'));
      up.step();
      await sees(says('step two'));
      const head = first.seen[0]?.payload;
      assert.equal(head?.$case, 'task');
      const taskId = head.value.id;
      const subscribedBefore = up.subscriptions();
      await a.stop('SIGKILL');
      assert.ok((await first.ended) !== undefined, 'the stream from the dead replica ends with an error');
      // B judges A gone (a full lease without its connection), takes the task over and resubscribes upstream.
      await waitFor(() => Promise.resolve(up.subscriptions() > subscribedBefore ? true : undefined)).catch(
        (err: unknown) => {
          console.log(b.stdout().slice(-8000), b.stderr().slice(-4000));
          throw err;
        },
      );
      // The caller resumes on B: the task as it stands, then what comes next.
      const onB = await v1Client(b.url, token, 'gw');
      const resumed = collect(onB.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: taskId })));
      await waitFor(() => Promise.resolve(resumed.seen.length > 0 ? true : undefined));
      up.step(); // phase 3: the last chunk and completed, while B follows
      assert.equal(await resumed.ended, undefined, 'the resumed stream ends normally');
      const snapshot = resumed.seen[0]?.payload;
      assert.equal(snapshot?.$case, 'task');
      assert.equal(textOf(snapshot.value.artifacts.find((x) => x.artifactId === 'answer')?.parts), 'alpha beta');
      const last = resumed.seen.at(-1)?.payload;
      assert.equal(last?.$case, 'statusUpdate');
      assert.equal(TaskState[last.value.status!.state], 'TASK_STATE_COMPLETED');
      // The log: every upstream event once, in order, no gap — the takeover added nothing of its own.
      const log = await logOf(b, taskId);
      assert.deepEqual(
        log.map(([seq]) => seq),
        log.map((_, i) => i + 1),
        'gap-free from 1, no duplicate',
      );
      assert.deepEqual(
        log.map(([, what]) => what),
        [
          'status SUBMITTED',
          'message ROLE_USER "script"',
          'status WORKING',
          'status WORKING "step one"',
          'artifact answer ="alpha"',
          'artifact answer +" beta"',
          'status WORKING "step two"',
          'artifact answer +" gamma" last',
          'status COMPLETED',
        ],
      );
      const task: Task = await onB.getTask(GetTaskRequest.fromJSON({ id: taskId, historyLength: 50 }));
      assert.equal(TaskState[task.status!.state], 'TASK_STATE_COMPLETED');
      assert.equal(textOf(task.artifacts.find((x) => x.artifactId === 'answer')?.parts), 'alpha beta gamma');
      // The upstream completed without a message: no empty agent message was made up.
      assert.equal(task.status?.message, undefined);
      assert.deepEqual(
        task.history.map((m) => textOf(m.parts)),
        ['script'],
      );
      assert.equal(typeof task.metadata?.['x-arbiter.upstream_task_id'], 'string');
      assert.equal(up.canceled.size, 0, 'the upstream task was never canceled');
    });

    it('the upstream lost the task (restarted) while its replica was down: the task taken over ends failed, saying so', async () => {
      a = await startServerProcess(env(homes[0]));
      const onB = await v1Client(b.url, token, 'gw');
      const stream = collect(onB.sendMessageStream(textMessage('script')));
      up.step();
      await waitFor(() =>
        Promise.resolve(
          stream.seen.some(
            (ev) =>
              ev.payload?.$case === 'statusUpdate' && textOf(ev.payload.value.status?.message?.parts) === 'step one',
          )
            ? true
            : undefined,
        ),
      );
      const head = stream.seen[0]?.payload;
      assert.equal(head?.$case, 'task');
      const taskId = head.value.id;
      const onA = await v1Client(a.url, token, 'gw');
      const get = () => onA.getTask(GetTaskRequest.fromJSON({ id: taskId }));
      await b.stop('SIGKILL');
      await up.restart(); // its in-memory store, and the task, are gone
      const failed = await waitFor(async () => {
        const t = await get();
        return TaskState[t.status!.state] === 'TASK_STATE_FAILED' ? t : undefined;
      });
      assert.match(
        String(failed.metadata?.['x-arbiter.error']),
        /^upstream_task_lost: the upstream agent no longer knows task .+ \(it may have restarted\)$/,
      );
      assert.match(textOf(failed.status?.message?.parts), /upstream_task_lost/);
      const log = await logOf(a, taskId);
      assert.deepEqual(
        log.map(([seq]) => seq),
        log.map((_, i) => i + 1),
      );
      assert.equal(log.filter(([, w]) => w.startsWith('status FAILED')).length, 1);
      b = await startServerProcess(env(homes[1]));
    });
  },
);
