import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { a2a, readSse, waitFor } from '../helpers/a2a.js';
import { ensureConsoleBuilt, launchChromium, openTab, signIn, SKIP_WITHOUT_CHROMIUM } from '../helpers/console.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** `UPDATE_SCREENSHOTS=1` writes the docs' screenshot of the overview; otherwise the page is only rendered and checked. */
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';
const SHOTS = join(process.cwd(), 'test-artifacts', 'console');

describe('console overview, usage and budgets pages in Chromium', { skip: SKIP_WITHOUT_CHROMIUM }, () => {
  let server: TestServer;
  let fake: FakeProvider;
  let browser: Browser;
  let acme: TestTenant;
  const offOrigin: string[] = [];

  const orchestrate = async (agent: string, message: string): Promise<void> => {
    const res = await fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, agent }),
    });
    assert.equal(res.status, 200);
    await readSse(res);
  };

  /** The text summary of the chart with this test id. */
  const summary = (page: Page, chart: string) => page.getByTestId(chart).getByTestId('summary');

  before(async () => {
    ensureConsoleBuilt();
    mkdirSync(SHOTS, { recursive: true });
    fake = new FakeProvider();
    await fake.start();
    fake.scripts.set('writer-model', () => ({ text: 'A draft.', usage: { input: 1200, output: 300 } }));
    fake.scripts.set('review-model', () => ({ text: 'Looks good.', usage: { input: 800, output: 90 } }));
    fake.scripts.set('broken-model', () => ({ text: 'no', status: 400 }));
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: 'sk-test-overview-0001',
        ARBITER_DEFAULT_MODEL: 'echo',
      },
    });
    acme = await newTenant(server, 'acme');
    await newAgent(acme, { id: 'writer', model: 'openai/writer-model' });
    await newAgent(acme, { id: 'reviewer', model: 'openai/review-model' });
    await newAgent(acme, { id: 'flaky', model: 'openai/broken-model' });
    for (let i = 0; i < 3; i++) await orchestrate('writer', `draft ${i}`);
    await orchestrate('reviewer', 'review');
    await orchestrate('flaky', 'try');
    const asked = await a2a(server.url, acme.token, 'index').send('ask');
    assert.equal(asked.result?.task?.status?.state, 'TASK_STATE_INPUT_REQUIRED');
    assert.equal((await a2a(server.url, acme.token, 'index').get('missing-task')).error?.code, -32001);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    await fake?.stop();
  });

  it('tenant: the overview is the first page, with real data, a table behind each chart, and live counts', async () => {
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(page, acme.token, 'Overview');
      await summary(page, 'chart-tasks')
        .getByText(/: 6 started/)
        .waitFor();
      assert.match(
        (await summary(page, 'chart-tasks').textContent()) ?? '',
        /6 started, 4 completed, 1 failed, 0 canceled, 1 waiting for input/,
      );
      await summary(page, 'chart-errors')
        .getByText(/1 × -32001 \(jsonrpc\)/)
        .waitFor();
      await summary(page, 'chart-agents')
        .getByText(/most: writer \(4,500 tokens\)/)
        .waitFor();
      assert.match((await summary(page, 'chart-latency').textContent()) ?? '', /run duration p50 \d/);
      assert.equal((await page.locator('.chart-card canvas').count()) >= 3, true, 'uPlot drew the time charts');

      await page.screenshot({ path: join(SHOTS, 'overview.png') });
      if (UPDATE) await page.screenshot({ path: join(process.cwd(), 'docs', 'console-overview.png') });

      // Each chart's table shows the numbers behind it.
      const tableOf = async (chart: string): Promise<string[][]> => {
        const card = page.getByTestId(chart);
        await card.getByRole('button', { name: 'Show table' }).click();
        const rows = card.locator('tbody tr');
        await rows.first().waitFor();
        const out: string[][] = [];
        for (let i = 0; i < (await rows.count()); i++) out.push(await rows.nth(i).locator('th, td').allTextContents());
        await card.getByRole('button', { name: 'Show chart' }).click();
        return out;
      };
      const tasks = await tableOf('chart-tasks');
      const sum = (col: number) => tasks.reduce((n, r) => n + Number(r[col]), 0);
      assert.deepEqual([1, 2, 3, 4, 5].map(sum), [6, 4, 1, 0, 1], 'started, completed, failed, canceled, input');
      assert.deepEqual(await tableOf('chart-errors'), [['jsonrpc', '-32001', '1']]);
      const agents = await tableOf('chart-agents');
      assert.deepEqual(
        agents.map((r) => r.slice(0, 4)),
        [
          ['reviewer', '1', '800', '90'],
          ['writer', '3', '3600', '900'],
        ],
      );
      const models = await tableOf('chart-models');
      assert.deepEqual(models.map((r) => r[0]).sort(), ['review-model', 'writer-model']);
      assert.ok((await tableOf('chart-latency')).length >= 1);

      // Laid out for a 1366×768 screen: nothing wider than the window.
      const width = await page.evaluate<number>('document.documentElement.scrollWidth');
      assert.ok(width <= 1366, `page width ${width}`);

      // A run while the page is open: its counts move without a reload.
      await orchestrate('writer', 'one more');
      await summary(page, 'chart-tasks')
        .getByText(/7 started, 5 completed/)
        .waitFor();
      assert.ok(!(await page.getByRole('link', { name: 'Budgets' }).count()), 'no budgets on this server: no page');
    } finally {
      await ctx.close();
    }
  });

  it('operator: the overview across tenants, and one tenant by the filter', async () => {
    const other = await newTenant(server, 'globex');
    assert.equal(
      (await a2a(server.url, other.token, 'index').send('hello')).result?.task?.status?.state,
      'TASK_STATE_COMPLETED',
    );
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(page, server.adminToken, 'Overview');
      await summary(page, 'chart-tasks')
        .getByText(/: 8 started/)
        .waitFor();
      await page.getByLabel('Tenant').selectOption({ label: 'globex' });
      await summary(page, 'chart-tasks')
        .getByText(/: 1 started, 1 completed/)
        .waitFor();
      await page.getByLabel('Window').selectOption('7d');
      await summary(page, 'chart-tasks')
        .getByText(/last 7 days: 1 started/)
        .waitFor();
    } finally {
      await ctx.close();
    }
  });

  it('usage page: the table by agent and model, and a CSV download', async () => {
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(page, acme.token, 'Usage');
      await page
        .getByTestId('usage-totals')
        .getByText(/: 5 calls,/)
        .waitFor();
      const rows = await page.locator('tbody tr').allTextContents();
      assert.equal(rows.length, 2, rows.join('\n'));
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Download CSV' }).click(),
      ]);
      assert.match(download.suggestedFilename(), /^usage-\d{4}-\d{2}-\d{2}\.csv$/);
      const csv = readFileSync(await download.path(), 'utf8')
        .trim()
        .split(/\r?\n/);
      assert.equal(csv[0], 'agent,model,calls,input_tokens,output_tokens,cached_tokens,cost,currency,unpriced_calls');
      assert.deepEqual(
        csv.slice(1).map((l) => l.split(',').slice(0, 5).join(',')),
        ['reviewer,review-model,1,800,90', 'writer,writer-model,4,4800,1200'],
      );
      await page.getByRole('checkbox', { name: 'day' }).check();
      await waitFor(async () =>
        (await page.locator('thead th').allTextContents()).includes('day') ? true : undefined,
      );
      // The budgets page is hidden when the server has no budgets routes; opened by URL it says so.
      await page.goto('/console/budgets');
      await page.getByText('This server has no budgets.').waitFor();
      assert.deepEqual(offOrigin, [], 'no request left the origin');
    } finally {
      await ctx.close();
    }
  });
});
