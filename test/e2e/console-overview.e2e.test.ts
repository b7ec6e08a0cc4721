import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { a2a, readSse, waitFor } from '../helpers/a2a.js';
import { ensureConsoleBuilt, launchChromium, openTab, signIn, SKIP_BROWSER } from '../helpers/console.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** `UPDATE_SCREENSHOTS=1` writes the docs' screenshot of the overview; otherwise the page is only rendered and checked. */
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';
const SHOTS = join(process.cwd(), 'test-artifacts', 'console');

describe('console overview, usage and budgets pages in Chromium', { skip: SKIP_BROWSER }, () => {
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

  /** When the current UTC day or month resets, as the budgets answer it (ISO). */
  const nextReset = async (period: 'day' | 'month'): Promise<string> =>
    ((await acme.client.get('/v1/budgets')).body.tenant.used[period].resets_at as string).replace('T', ' ');

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
    // A runaway agent: every reply asks for a command, so its turn calls the model again (1000 tokens a call).
    fake.scripts.set('runaway-model', () => ({
      text: 'Step one, then more.\n/mem list\n',
      usage: { input: 600, output: 400 },
    }));
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
    // Budgets: the tenant's for the month, the writer's and the reviewer's for the day (reviewer: 890 of 1000).
    assert.equal(
      (await server.admin.patch(`/v1/admin/tenants/${acme.id}/limits`, { tokens_per_month: 20_000 })).status,
      200,
    );
    assert.equal((await acme.client.put('/v1/agents/writer/budget', { tokens_per_day: 10_000 })).status, 200);
    assert.equal((await acme.client.put('/v1/agents/reviewer/budget', { tokens_per_day: 1000 })).status, 200);
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
      await summary(page, 'chart-budgets')
        .getByText(/most used: reviewer, tokens today 890 of 1,000 \(89%\); 1 at or past the 80% warning/)
        .waitFor();
      assert.equal((await page.locator('.chart-card canvas').count()) >= 3, true, 'uPlot drew the time charts');

      await page.screenshot({ path: join(SHOTS, 'overview.png'), fullPage: true });
      if (UPDATE) await page.screenshot({ path: join(process.cwd(), 'docs', 'console-overview.png'), fullPage: true });

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
      assert.deepEqual(await tableOf('chart-budgets'), [
        ['the tenant', 'tokens this month', '5,390', '20,000', '27', (await nextReset('month')).slice(0, 16)],
        ['reviewer', 'tokens today', '890', '1,000', '89', (await nextReset('day')).slice(0, 16)],
        ['writer', 'tokens today', '4,500', '10,000', '45', (await nextReset('day')).slice(0, 16)],
      ]);
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
      // And its tokens count against the writer's budget.
      await page.getByTestId('chart-budgets').getByLabel('Tokens today: 6,000 of 10,000 (60%)').waitFor();
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
      // Across tenants, the budget chart names each tenant's budgets.
      await page.getByTestId('chart-budgets').getByText('acme / reviewer', { exact: true }).waitFor();
      await page.getByTestId('chart-budgets').getByText('tenant acme', { exact: true }).waitFor();
      await page.locator('form.filters').getByLabel('Tenant').selectOption({ label: 'globex' });
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
      assert.deepEqual(offOrigin, [], 'no request left the origin');
    } finally {
      await ctx.close();
    }
  });

  it('budgets page: used against limit; an agent budget edited, given, removed; errors on their fields', async () => {
    const readOnly = await server.admin.post(`/v1/admin/tenants/${acme.id}/tokens`, { scopes: ['tasks:read'] });
    assert.equal(readOnly.status, 201, readOnly.text);
    // A token without agents:write sees the budgets and no control to change them.
    {
      const { ctx, page } = await openTab(browser, server.url, offOrigin);
      try {
        await signIn(page, readOnly.body.token as string, 'Budgets');
        await page.getByTestId('budget-writer').getByLabel('Tokens today: 6,000 of 10,000 (60%)').waitFor();
        await page.getByTestId('budgets-read-only').waitFor();
        assert.equal(await page.getByRole('button', { name: /Edit budget/ }).count(), 0);
        assert.equal(await page.getByLabel('Give an agent a budget').count(), 0);
      } finally {
        await ctx.close();
      }
    }
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(page, acme.token, 'Budgets');
      const tenantCard = page.getByTestId('budget-tenant');
      await tenantCard.getByLabel('Tokens this month: 6,890 of 20,000 (34%)').waitFor();
      assert.match(
        (await tenantCard.textContent()) ?? '',
        /The day resets at 00:00 UTC on \d+ \w+, the month at 00:00 UTC on 1 \w+\./,
      );
      await page.getByTestId('budget-reviewer').getByLabel('Tokens today: 890 of 1,000 (89%)').waitFor();
      if (UPDATE) await page.screenshot({ path: join(process.cwd(), 'docs', 'console-budgets.png') });

      // Edit the writer's budget: saved, and the API answers it.
      const writer = page.getByTestId('budget-writer');
      await writer.getByRole('button', { name: 'Edit budget of writer' }).click();
      await writer.getByLabel(/^Tokens per day/).fill('12000');
      await writer.getByRole('button', { name: 'Save' }).click();
      await page.getByTestId('budgets-notice').getByText('Saved the budget of writer.').waitFor();
      await writer.getByLabel('Tokens today: 6,000 of 12,000 (50%)').waitFor();
      const after = (await acme.client.get('/v1/budgets')).body;
      assert.equal(after.agents.find((a: { agent: string }) => a.agent === 'writer').limits.tokens_per_day, 12_000);

      // Bad values: each error on its field, and nothing changed.
      const fieldError = (key: string) => writer.locator(`.field-error[data-field="${key}"]`);
      await writer.getByRole('button', { name: 'Edit budget of writer' }).click();
      await writer.getByLabel(/^Cost per day/).fill('1');
      await writer.getByRole('button', { name: 'Save' }).click();
      await fieldError('cost_per_day')
        .getByText(/needs model prices/)
        .waitFor();
      assert.equal(await writer.getByLabel(/^Cost per day/).getAttribute('aria-invalid'), 'true');
      await writer.getByLabel(/^Cost per day/).fill('');
      await writer.getByLabel(/^Tokens per day/).fill('100');
      await writer.getByLabel(/^Tokens per month/).fill('50000');
      await writer.getByRole('button', { name: 'Save' }).click();
      await fieldError('tokens_per_day')
        .getByText('tokens_per_day must not be below what was already spent today (6000)')
        .waitFor();
      await fieldError('tokens_per_month')
        .getByText("tokens_per_month must not exceed the tenant's own tokens_per_month (20000)")
        .waitFor();
      await writer.getByLabel(/^Tokens per day/).fill('lots');
      await writer.getByRole('button', { name: 'Save' }).click();
      await fieldError('tokens_per_day')
        .getByText(/must be null \(none\) or a whole number/)
        .waitFor();
      const unchanged = (await acme.client.get('/v1/budgets')).body;
      assert.deepEqual(unchanged.agents.find((a: { agent: string }) => a.agent === 'writer').limits, {
        tokens_per_day: 12_000,
        tokens_per_month: null,
        cost_per_day: null,
        cost_per_month: null,
        requests_per_day: null,
        requests_per_month: null,
      });
      await writer.getByRole('button', { name: 'Cancel' }).click();

      // An agent without a budget or usage is given one, then it is removed.
      await page.getByLabel('Give an agent a budget').selectOption('flaky');
      await page
        .getByTestId('budget-new')
        .getByLabel(/^Tokens per month/)
        .fill('3000');
      await page.getByTestId('budget-new').getByRole('button', { name: 'Save' }).click();
      const flaky = page.getByTestId('budget-flaky');
      await flaky.getByLabel('Tokens this month: 0 of 3,000 (0%)').waitFor();
      await flaky.getByRole('button', { name: 'Edit budget of flaky' }).click();
      await flaky.getByRole('button', { name: 'Remove budget' }).click();
      await page.getByTestId('budgets-notice').getByText('Removed the budget of flaky.').waitFor();
      await flaky.waitFor({ state: 'detached' });
      assert.equal((await acme.client.delete('/v1/agents/flaky/budget')).status, 404, 'no budget left');
      assert.deepEqual(offOrigin, [], 'no request left the origin');
    } finally {
      await ctx.close();
    }
  });

  it('an operator sets a tenant’s monthly budget; its runaway agent stops there, saying so; the month’s report downloads', async () => {
    const team = await newTenant(server, 'runaway-team');
    await newAgent(team, { id: 'looper', model: 'openai/runaway-model' });
    const admin = await openTab(browser, server.url, offOrigin);
    try {
      const page = admin.page;
      await signIn(page, server.adminToken, 'Budgets');
      // The list of every tenant with a budget, by name.
      await page.getByTestId('budget-tenant-acme').getByText(acme.id).waitFor();
      assert.equal(await page.getByTestId('budget-tenant-runaway-team').count(), 0, 'no budget yet');
      await page.getByLabel('Tenant').selectOption({ label: 'runaway-team' });
      await page.getByRole('heading', { name: 'Tenant runaway-team' }).waitFor();
      const card = page.getByTestId('budget-tenant');
      await card.getByText('No tenant budget.').waitFor();
      await card.getByLabel(/^Tokens per month/).fill('-5');
      await card.getByRole('button', { name: 'Save' }).click();
      await card
        .locator('.field-error[data-field="tokens_per_month"]')
        .getByText(/must be null \(no budget\) or a whole number/)
        .waitFor();
      // The page reads the budgets again after a save; an edit made before that read lands is kept. The read is
      // held until the edit is made, so the order is the one a slow network gives.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const reads = (url: URL): boolean =>
        url.pathname === '/v1/admin/budgets' && url.searchParams.get('tenant') === team.id;
      await page.route(reads, async (route) => {
        await held;
        await route.continue();
      });
      await card.getByLabel(/^Tokens per month/).fill('2500');
      await card.getByRole('button', { name: 'Save' }).click();
      await page.getByTestId('budgets-notice').getByText('Saved the budget of runaway-team.').waitFor();
      await card.getByLabel(/^Tokens per day/).fill('900');
      release();
      await card.getByLabel('Tokens this month: 0 of 2,500 (0%)').waitFor();
      await page.unroute(reads);
      assert.equal(await card.getByLabel(/^Tokens per day/).inputValue(), '900', 'the edit made meanwhile is kept');
      assert.equal(await card.getByLabel(/^Tokens per month/).inputValue(), '2500');
      await card.getByLabel(/^Tokens per day/).fill('');
      assert.equal((await server.admin.get(`/v1/admin/tenants/${team.id}`)).body.limits.tokens_per_month, 2500);

      // The tenant's runaway agent: three calls of 1000 tokens, then the budget stops it.
      const res = await fetch(`${server.url}/v1/orchestrate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${team.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'go', agent: 'looper' }),
      });
      assert.equal(res.status, 200);
      await readSse(res);
      const message = 'budget exhausted for tenant runaway-team (tokens this month: 3000 of 2500)';
      const tasks = (await team.client.get('/v1/requests?agent_id=looper')).body.items as {
        id: string;
        state: string;
      }[];
      assert.equal(tasks.length, 1);
      assert.equal(tasks[0].state, 'failed');
      // The next run is refused before it starts.
      const refused = await team.client.post('/v1/orchestrate', { message: 'again', agent: 'looper' });
      assert.equal(refused.status, 429, refused.text);
      assert.equal(refused.body.error, message);

      // The tenant sees why in the console's task view.
      const tab = await openTab(browser, server.url, offOrigin);
      try {
        await signIn(tab.page, team.token, 'Tasks');
        await tab.page.goto(`/console/tasks/${tasks[0].id}`);
        await tab.page.getByTestId('task-state').getByText('failed').waitFor();
        await tab.page.getByText(message).first().waitFor();
      } finally {
        await tab.ctx.close();
      }

      // The operator's budgets page shows it spent; the month's report by tenant downloads as CSV.
      await page.reload();
      await page
        .getByTestId('budget-tenant-runaway-team')
        .getByLabel('Tokens this month: 3,000 of 2,500 (120%)')
        .waitFor();
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage', exact: true }).click();
      // Per team: by tenant only, this month.
      await page.getByLabel('Period').selectOption('month');
      await page.getByRole('checkbox', { name: 'agent' }).uncheck();
      await page.getByRole('checkbox', { name: 'model' }).uncheck();
      await waitFor(async () =>
        (await page.locator('thead th').allTextContents()).includes('model') ? undefined : true,
      );
      await page.locator('tbody').getByText('runaway-team').waitFor();
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Download CSV' }).click(),
      ]);
      const csv = readFileSync(await download.path(), 'utf8')
        .trim()
        .split(/\r?\n/);
      assert.equal(
        csv[0],
        'tenant,tenant_name,calls,input_tokens,output_tokens,cached_tokens,cost,currency,unpriced_calls',
      );
      const row = csv.find((l) => l.includes(',runaway-team,'));
      assert.ok(row, csv.join('\n'));
      assert.match(row, new RegExp(`^${team.id},runaway-team,3,1800,1200,`));
      assert.deepEqual(offOrigin, [], 'no request left the origin');
    } finally {
      await admin.ctx.close();
    }
  });
});
