import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { a2a, sendParams } from '../helpers/a2a.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const PAGE_BYTES = 64 * 1024;
const TASKS = 10;
/** Each task's text; the echo agent answers with it, so a task's history holds it twice. */
const TEXT_CHARS = 9_000;

/**
 * Task lists are bounded in bytes, not only in tasks: a page carries at most
 * ARBITER_LIST_PAGE_BYTES of content after its first task, chosen from the
 * stored sizes before any content is read, with a token for the rest.
 */
describe('task lists: pages bounded in bytes (ARBITER_LIST_PAGE_BYTES)', () => {
  let server: TestServer;
  let t: TestTenant;
  const ids: string[] = [];

  /** A call's result (a reply without one fails the test). */
  const call = async (method: string, params: unknown): Promise<any> => {
    const body = await a2a(server.url, t.token).call(method, params);
    assert.ok(body.result, JSON.stringify(body.error));
    return body.result;
  };

  /** Every page of ListTasks with these params; each page's tasks as served, in order. */
  const pages = async (params: Record<string, unknown>): Promise<any[][]> => {
    const out: any[][] = [];
    let pageToken = '';
    do {
      const r = await call('ListTasks', { ...params, ...(pageToken ? { pageToken } : {}) });
      assert.equal(r.totalSize, TASKS);
      out.push(r.tasks);
      pageToken = r.nextPageToken ?? '';
      assert.ok(out.length <= TASKS, 'pages end');
    } while (pageToken);
    return out;
  };

  /** Each page holds at most the budget after its first task, and together the pages hold every task once, newest first. */
  const checkPages = (got: any[][]): void => {
    for (const page of got) {
      assert.ok(page.length >= 1);
      const rest = page.slice(1).reduce((n, task) => n + JSON.stringify(task).length, 0);
      assert.ok(rest <= PAGE_BYTES, `a page carries ${rest} bytes after its first task`);
    }
    assert.deepEqual(
      got.flat().map((task) => task.id),
      [...ids].reverse(),
    );
  };

  before(async () => {
    server = await startTestServer({ env: { ARBITER_LIST_PAGE_BYTES: String(PAGE_BYTES) } });
    t = await newTenant(server, 'pages');
    for (let i = 0; i < TASKS; i++) {
      const text = `${i} `.padEnd(TEXT_CHARS, 'x');
      const r = await call('SendMessage', sendParams(text));
      assert.equal(r.task.status.state, 'TASK_STATE_COMPLETED');
      ids.push(r.task.id);
    }
  });
  after(() => server.close());

  it('the default view (whole history): shorter pages than pageSize, a token for the rest, every task once', async () => {
    const got = await pages({ pageSize: 100 });
    assert.ok(got.length >= 3, `${got.length} pages`);
    assert.ok(got[0].length > 1, 'a page holds as many tasks as fit');
    assert.equal(got[0][0].history.length, 2);
    checkPages(got);
  });

  it('what the view leaves out does not count: artifacts add to a page, historyLength 0 takes history out', async () => {
    const withArtifacts = await pages({ pageSize: 100, includeArtifacts: true });
    checkPages(withArtifacts);
    const plain = await pages({ pageSize: 100 });
    assert.ok(
      withArtifacts.length > plain.length,
      `${withArtifacts.length} pages with artifacts, ${plain.length} without`,
    );
    const noHistory = await pages({ pageSize: 100, historyLength: 0 });
    checkPages(noHistory);
    assert.ok(noHistory[0].length > plain[0].length, 'more tasks on a page without their history');
    assert.equal(noHistory[0][0].history, undefined);
    // historyLength is applied by the database: the last message only.
    const last = await pages({ pageSize: 100, historyLength: 1 });
    checkPages(last);
    for (const task of last.flat())
      assert.deepEqual(
        task.history.map((m: any) => m.role),
        ['ROLE_AGENT'],
      );
  });

  it('one task larger than the budget is a page of its own', async () => {
    const big = await newTenant(server, 'pages-big');
    const agent = a2a(server.url, big.token);
    const send = async () => {
      const res = await agent.post('SendMessage', sendParams('y'.repeat(PAGE_BYTES)));
      assert.equal(res.status, 200);
    };
    await send();
    await send();
    const list = async (pageToken?: string): Promise<any> =>
      (await agent.list({ pageSize: 10, ...(pageToken ? { pageToken } : {}) })).result;
    const first = await list();
    assert.equal(first.tasks.length, 1);
    assert.ok(first.nextPageToken);
    const second = await list(first.nextPageToken);
    assert.equal(second.tasks.length, 1);
    assert.equal(second.nextPageToken ?? '', '');
  });

  it('the native list (/v1/requests) is paged the same way', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pagesSeen = 0;
    do {
      const res: { status: number; text: string; body: any } = await t.client.get(
        `/v1/requests?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
      );
      assert.equal(res.status, 200, res.text);
      const rest = res.body.items.slice(1).reduce((n: number, item: unknown) => n + JSON.stringify(item).length, 0);
      // The native view also shows artifacts and the reply: the budget is on stored content, the view adds a little.
      assert.ok(rest <= PAGE_BYTES * 1.5, `${rest} bytes after the first item`);
      seen.push(...res.body.items.map((i: { id: string }) => i.id));
      cursor = res.body.next_cursor;
      pagesSeen++;
    } while (cursor && pagesSeen <= TASKS);
    assert.ok(pagesSeen > 1);
    assert.deepEqual(seen, [...ids].reverse());
  });
});
