import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { agentSnippets } from '../../src/console/agent-snippets.js';
import { waitFor } from '../helpers/a2a.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { startIdp, type SigningJwk, type TestIdp } from '../helpers/oidc-provider.js';
import { CHROMIUM, ensureConsoleBuilt, openTab, SKIP_BROWSER, signIn } from '../helpers/console.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startUpstream, type Upstream } from '../helpers/upstream-agent.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const SHOTS = join(process.cwd(), 'test-artifacts', 'console');

/** Waits until the page's table has `n` body rows (the console's CSP forbids evaluating strings in the page). */
async function rowsBecome(page: Page, n: number): Promise<void> {
  const rows = page.locator('tbody tr');
  await waitFor(async () => ((await rows.count()) === n ? true : undefined)).catch(() => undefined);
  assert.equal(await rows.count(), n, 'table rows');
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) });

/** An RS256 signing key for the test IdP, kept so the test can also sign a token the IdP would not issue. */
async function signingKey(): Promise<SigningJwk> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: 'console-test', alg: 'RS256', use: 'sig' };
}

/** Where the console keeps its session in the tab (console/src/session.ts). */
const SESSION_KEY = 'arbiter.console.session';

describe('web console (/console) in Chromium', { skip: SKIP_BROWSER }, () => {
  let server: TestServer;
  let fake: FakeProvider;
  let idp: TestIdp;
  let idpKey: SigningJwk;
  let browser: Browser;
  const offOrigin: string[] = [];
  let admin: Page;
  let tenant: Page;
  let tenantCtx: BrowserContext;
  let tenantToken = '';
  let tenantId = '';
  let upstream: Upstream | undefined;
  /** The task canceled from its page (for the deep-link test). */
  let heldTask = '';

  before(async () => {
    ensureConsoleBuilt();
    mkdirSync(SHOTS, { recursive: true });
    fake = new FakeProvider();
    await fake.start();
    // A scripted model that uses tools: it delegates to another agent and writes a file, then answers.
    fake.scripts.set('toolsmith', (c) =>
      c.call % 2 === 1
        ? '/agent parrot repeat after me\n/write notes/todo.md\n- try the console\n/endwrite'
        : 'All done.',
    );
    // An identity provider whose JWTs the server may be told to trust (plain http on loopback: allow-listed).
    idpKey = await signingKey();
    idp = await startIdp(undefined, { keys: [idpKey] });
    upstream = await startUpstream();
    server = await startTestServer({
      // Several chunks with a pause between them: the reply streams as separate text events. Agents without a
      // model run on the echo model; `openai/toolsmith` is the scripted one.
      env: {
        ARBITER_ECHO_CHUNKS: '6',
        ARBITER_ECHO_DELAY_MS: '40',
        ARBITER_DEFAULT_MODEL: 'echo',
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: 'sk-test-console-0001',
        ARBITER_IDENTITY_ALLOWLIST: new URL(idp.issuer).host,
        // Inline secrets of a tenant's remote agents and MCP servers are sealed: a key, or they are refused.
        ARBITER_SECRETS_KEY: randomBytes(32).toString('base64'),
        // A remote-backed agent's upstream is on loopback.
        ARBITER_A2A_ALLOW_PRIVATE: 'true',
      },
      prepareHome: (home) => {
        writeFileSync(
          join(home, 'a2a_agents.json'),
          JSON.stringify({
            agents: {
              weather: {
                url: 'http://127.0.0.1:9/a2a/weather?key=url-secret-123',
                auth: { type: 'bearer', token: 'remote-secret-456' },
              },
              reviewer: { url: 'http://127.0.0.1:9/a2a/reviewer', auth: { token_env: 'ARBITER_TEST_UNSET_VAR_X' } },
            },
          }),
        );
        writeFileSync(join(home, 'mcp_servers.json'), '{"mcpServers": {"broken": {"type": "stdio"}}}');
      },
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    admin = (await openTab(browser, server.url, offOrigin)).page;
    const t = await openTab(browser, server.url, offOrigin);
    tenant = t.page;
    tenantCtx = t.ctx;
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    await fake?.stop();
    await idp?.close();
    await upstream?.close();
  });

  /** A new token of tenant acme with only these scopes (`POST /v1/admin/tenants/:id/tokens`). */
  const tokenWith = async (scopes: string[]): Promise<string> => {
    const res = await server.admin.post(`/v1/admin/tenants/${tenantId}/tokens`, { scopes });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.scopes, scopes);
    return res.body.token as string;
  };

  it('serves the console with its own CSP, SPA fallback, and 404 for a missing asset', async () => {
    const page = await server.http.get('/console/tasks/whatever');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /connect-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|https:/);
    assert.equal((await server.http.get('/console/assets/missing-1234.js')).status, 404);
    // A page: helmet's headers for documents too.
    assert.equal(page.headers.get('cross-origin-opener-policy'), 'same-origin');
    const api = await server.http.get('/v1/health');
    assert.doesNotMatch(api.headers.get('content-security-policy') ?? '', /script-src/, 'the API keeps its own');
    assert.equal(api.headers.get('cross-origin-opener-policy'), null);
    const bad = await server.http.post('/console/', {});
    assert.equal(bad.status, 405);
  });

  it('admin: signs in, creates a tenant (token shown once), sees the registries with their errors and the audit log', async () => {
    // Keyboard only: the page heading has the focus, Tab reaches the token field, Enter signs in.
    await admin.goto('/console/');
    await admin.getByRole('heading', { level: 1, name: 'Arbiter console' }).waitFor();
    await admin.keyboard.press('Tab');
    assert.equal(await admin.evaluate('document.activeElement.id'), 'token');
    await admin.keyboard.type(server.adminToken);
    await admin.keyboard.press('Enter');
    // Operators start at the overview; the tenants are one link away.
    await admin.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await admin.getByRole('link', { name: 'Tenants' }).click();
    await admin.getByRole('heading', { level: 1, name: 'Tenants' }).waitFor();
    assert.equal(await admin.evaluate('document.activeElement.tagName'), 'H1', 'a new page focuses its heading');
    assert.equal(await admin.locator('header .who-name').textContent(), 'admin');
    assert.equal(await admin.getByTestId('actor').textContent(), 'root', 'the actor audit entries name');
    // Tab moves on from the heading into the page (the skip link and navigation come before it); focused controls
    // show a focus ring.
    await admin.keyboard.press('Tab');
    assert.equal(await admin.evaluate('document.activeElement.id'), 'tenant-name');
    assert.equal(await admin.evaluate('getComputedStyle(document.activeElement).outlineStyle'), 'solid');
    await admin.keyboard.press('Shift+Tab');
    assert.equal(await admin.evaluate('document.activeElement.textContent'), 'Sign out');
    await admin.keyboard.press('Shift+Tab');
    assert.equal(await admin.evaluate('document.activeElement.textContent'), 'Registries');
    assert.equal(await admin.evaluate('getComputedStyle(document.activeElement).outlineStyle'), 'solid');
    await admin.getByLabel('New tenant name').fill('acme');
    await admin.getByRole('button', { name: 'Create tenant' }).click();
    const token = (await admin.locator('.once pre code').textContent()) ?? '';
    assert.match(token, /^atr_[0-9a-f]{64}$/);
    tenantToken = token;
    const row = admin.locator('tr[data-tenant="acme"]');
    await row.waitFor();
    tenantId = ((await row.locator('code').textContent()) ?? '').trim();
    await shot(admin, 'admin-tenants');
    await admin.getByRole('button', { name: 'I have copied it' }).click();
    assert.equal(await admin.locator('.once').count(), 0, 'the token is gone once dismissed');

    await admin.getByRole('link', { name: 'Registries' }).click();
    await admin.getByRole('heading', { name: 'Remote A2A agents' }).waitFor();
    await admin.getByText('unset: ARBITER_TEST_UNSET_VAR_X').waitFor();
    await admin.getByText(/Load error .*mcp_servers\.json/).waitFor();
    const html = await admin.content();
    assert.ok(html.includes('http://127.0.0.1:9/a2a/weather'), 'the remote is listed');
    for (const secret of ['url-secret-123', 'remote-secret-456'])
      assert.ok(!html.includes(secret), `${secret} not shown`);
    await shot(admin, 'admin-registries');

    // Another tenant, disabled: the audit log names tenants and says what changed, not raw JSON.
    const beta = await server.admin.post('/v1/admin/tenants', { name: 'beta' });
    assert.equal(
      (await server.admin.patch(`/v1/admin/tenants/${beta.body.tenant.id}`, { disabled: true })).status,
      200,
    );
    await admin.getByRole('link', { name: 'Audit log' }).click();
    await admin.getByRole('cell', { name: 'tenant.create' }).first().waitFor();
    const created = admin.locator('tr[data-action="tenant.create"]').filter({ hasText: 'name: acme' });
    await created.getByTestId('audit-tenant').getByText('acme', { exact: true }).waitFor();
    const disabled = admin.locator('tr[data-action="tenant.disable"]');
    await disabled.getByTestId('audit-tenant').getByText('beta', { exact: true }).waitFor();
    assert.equal(await disabled.getByTestId('audit-changes').textContent(), 'status: active → disabled');
    const changes = (await admin.getByTestId('audit-changes').allTextContents()).join('\n');
    assert.match(changes, /first token: atr_[0-9a-f]{8}…/);
    assert.doesNotMatch(changes, /[{}"]/, 'no raw JSON');
    assert.ok(!(await admin.locator('tbody').textContent())?.includes(tenantId.slice(0, 8)), 'names, not id prefixes');
    await shot(admin, 'admin-audit');
  });

  it('tenant: creates an agent with per-field validation errors, sees its card and endpoints', async () => {
    await signIn(tenant, tenantToken, 'Agents');
    assert.equal(
      await tenant.locator('header .who-name').textContent(),
      'tenant acme',
      'the tenant by name (GET /v1/me)',
    );
    assert.equal(await tenant.getByTestId('actor').textContent(), `token:${tenantToken.slice(0, 12)}`);
    assert.equal(await tenant.getByTestId('scopes').count(), 0, 'every scope: nothing to point out');
    await tenant.getByRole('link', { name: 'New agent' }).click();
    // The model field suggests this server's models (GET /v1/models) and still takes any provider/model.
    assert.equal(await tenant.getByLabel('Model').getAttribute('list'), 'f-model-list');
    await tenant.locator('#f-model-list option[value="openai/"]').waitFor({ state: 'attached' });
    const offered = await tenant
      .locator('#f-model-list option')
      .evaluateAll((os) => os.map((o) => o.getAttribute('value') ?? ''));
    const models = (await server.as(tenantToken).get('/v1/models')).body as {
      providers: { models: string[] }[];
    };
    const expected = models.providers.flatMap((p) => p.models.map((m) => m.split('<')[0]));
    assert.ok(expected.includes('echo') && expected.includes('openai/'), expected.join());
    assert.deepEqual(offered.sort(), expected.sort());
    assert.match((await tenant.locator('#f-model-hint').textContent()) ?? '', /server default, echo/);
    const capsHint = (await tenant.locator('#f-capabilities-hint').textContent()) ?? '';
    for (const tool of ['/mcp,', '/search', '/mcp:<server>']) assert.ok(capsHint.includes(tool), capsHint);
    await tenant.getByLabel('Id').fill('bad id!');
    await tenant.getByLabel('Temperature').fill('5');
    await tenant.getByLabel('Capabilities').fill('/teleport');
    await tenant.getByRole('button', { name: 'Create agent' }).click();
    for (const field of ['id', 'temperature', 'capabilities']) {
      await tenant.locator(`.field-error[data-field="${field}"]`).waitFor();
      assert.equal(await tenant.locator(`#f-${field}`).getAttribute('aria-invalid'), 'true', field);
    }
    assert.match((await tenant.locator('.field-error[data-field="temperature"]').textContent()) ?? '', /2/);
    await tenant.getByLabel('Id').fill('helper');
    await tenant.getByLabel('Temperature').fill('0.3');
    await tenant.getByLabel('Role').fill('Console test agent');
    await tenant.getByLabel('Capabilities').fill('summarising');
    await tenant.getByRole('button', { name: 'Create agent' }).click();
    await tenant.getByRole('heading', { level: 1, name: 'Agent helper' }).waitFor();
    await tenant.getByRole('cell', { name: 'HTTP+JSON' }).waitFor();
    assert.ok((await tenant.getByRole('cell', { name: 'JSONRPC' }).count()) >= 2, 'JSON-RPC 1.0 and 0.3');
    const card = JSON.parse((await tenant.locator('pre.card-json').textContent()) ?? '{}');
    assert.equal(card.name, 'helper');
    assert.ok(
      card.skills.some((s: { id: string }) => /summarising/.test(s.id)),
      JSON.stringify(card.skills),
    );
    const snippet = (await tenant.getByLabel('curl: REST message:stream (SSE)', { exact: true }).textContent()) ?? '';
    assert.ok(snippet.includes(`${server.url}/v1/a2a/agents/helper/message:stream`), snippet);
    assert.ok(!snippet.includes(tenantToken), 'snippets use $TOKEN, never the token');
    // The page shows exactly the snippets the snippet test runs (console-snippets.e2e).
    for (const s of agentSnippets(server.url, 'helper')) {
      assert.equal(await tenant.getByLabel(s.label, { exact: true }).textContent(), s.text, s.label);
    }
    await shot(tenant, 'tenant-agent');

    // Edit: an invalid value is shown on its field and changes nothing; a valid one saves.
    await tenant.getByLabel('Max tokens').fill('0');
    await tenant.getByRole('button', { name: 'Save changes' }).click();
    await tenant.locator('.field-error[data-field="max_tokens"]').waitFor();
    await tenant.getByLabel('Max tokens').fill('1000');
    await tenant.getByRole('button', { name: 'Save changes' }).click();
    await tenant.getByText('Saved.').waitFor();
    const stored = await server.as(tenantToken).get('/v1/agents/helper');
    assert.equal(stored.body.agent_def.max_tokens, 1000);
    assert.equal(stored.body.agent_def.temperature, 0.3);
  });

  it('tenant: chats through A2A streaming, continues on input-required, and watches the timeline to completion', async () => {
    await tenant.getByRole('link', { name: 'Try it' }).click();
    await tenant.getByRole('heading', { level: 1, name: 'Try helper' }).waitFor();
    const input = tenant.getByLabel('Message');
    await input.fill('hello from the console, streamed back in pieces');
    await tenant.getByRole('button', { name: 'Send' }).click();
    const turn = tenant.getByTestId('agent-turn').last();
    await turn.locator('.badge.state-completed').waitFor();
    assert.equal(await turn.locator('.reply').textContent(), 'hello from the console, streamed back in pieces');

    // input-required: the answer continues the same task.
    await input.fill('ask');
    await tenant.getByRole('button', { name: 'Send' }).click();
    const asking = tenant.getByTestId('agent-turn').last();
    await asking.locator('.badge.state-input-required').waitFor();
    await asking.getByText('What should I echo?').waitFor();
    const askedTask = await asking.getByRole('link', { name: /timeline of/ }).getAttribute('href');
    await tenant.getByLabel('Your answer (continues the task)').fill('the answer');
    await tenant.getByRole('button', { name: 'Send' }).click();
    const answered = tenant.getByTestId('agent-turn').last();
    await answered.locator('.badge.state-completed').waitFor();
    assert.equal(await answered.getByRole('link', { name: /timeline of/ }).getAttribute('href'), askedTask);
    assert.match((await answered.textContent()) ?? '', /the answer/);
    await shot(tenant, 'tenant-chat');

    // The first turn's timeline: every event, the streamed text merged into one entry that grew in place.
    await tenant
      .getByTestId('agent-turn')
      .first()
      .getByRole('link', { name: /timeline of/ })
      .click();
    await tenant
      .getByTestId('stream-state')
      .getByText(/complete/)
      .waitFor();
    await tenant.locator('[data-event="done"]').waitFor();
    for (const ev of ['request_received', 'stream_start', 'token_usage', 'stream_end']) {
      assert.equal(await tenant.locator(`[data-event="${ev}"]`).count(), 1, ev);
    }
    assert.equal(await tenant.locator('[data-event="text"]').count(), 1, 'one text entry');
    assert.equal(
      await tenant.locator('[data-event="text"] .ev-text-body').textContent(),
      'hello from the console, streamed back in pieces',
    );
    const taskId = tenant.url().split('/').pop() ?? '';
    const log = await fetch(`${server.url}/v1/requests/${taskId}/events?format=log`, {
      headers: { Authorization: `Bearer ${tenantToken}` },
    });
    const logText = await log.text();
    // The A2A run logs each streamed chunk as an append to the `response` artifact.
    const textEvents = logText
      .split('\n')
      .filter((l) => l.startsWith('data:') && l.includes('"name":"response"')).length;
    assert.ok(textEvents > 1, `the reply was streamed as ${textEvents} text events: ${logText}`);
    await tenant.getByTestId('task-state').getByText('completed').waitFor();
    await shot(tenant, 'tenant-task');
  });

  it('tenant: creates an agent backed by a remote agent, talks to it and opens its task timeline', async () => {
    const entry = await server
      .as(tenantToken)
      .post('/v1/remote-agents', { name: 'vendor', url: `${upstream?.url}/rpc` });
    assert.equal(entry.status, 201, entry.text);
    await tenant.getByRole('link', { name: 'Agents' }).first().click();
    await tenant.getByRole('link', { name: 'New agent' }).click();
    await tenant.getByLabel('Id').fill('gateway');
    await tenant.getByLabel('Backed by').selectOption('remote');
    assert.equal(await tenant.getByLabel('Model').count(), 0, 'no model for a remote-backed agent');
    await tenant.locator('#f-remote-list option[value="vendor"]').waitFor({ state: 'attached' });
    await tenant.getByLabel('Remote agent').fill('vendor');
    await tenant.getByLabel('Registry').selectOption('tenant');
    await tenant.getByLabel('idle timeout (ms)').fill('5');
    await tenant.getByRole('button', { name: 'Create agent' }).click();
    await tenant.locator('.field-error[data-field="idle_ms"]').waitFor();
    await tenant.getByLabel('idle timeout (ms)').fill('60000');
    await tenant.getByRole('button', { name: 'Create agent' }).click();
    await tenant.getByRole('heading', { level: 1, name: /gateway/ }).waitFor();
    const stored = await server.as(tenantToken).get('/v1/agents/gateway');
    assert.deepEqual(stored.body.agent_def.backend, {
      remote: 'vendor',
      registry: 'tenant',
      timeouts: { first_event_ms: 30000, idle_ms: 60000, total_ms: 900000 },
    });
    await tenant.getByRole('link', { name: 'Try it' }).click();
    await tenant.getByLabel('Message').fill('hello upstream');
    await tenant.getByRole('button', { name: 'Send' }).click();
    const turn = tenant.getByTestId('agent-turn').last();
    await turn.locator('.badge.state-completed').waitFor();
    await turn.getByRole('link', { name: /timeline of/ }).click();
    await tenant.getByTestId('task-state').getByText('completed').waitFor();
    await tenant.locator('[data-event="request_received"]').waitFor();
    await tenant.locator('[data-event="done"]').waitFor();
    await shot(tenant, 'tenant-gateway-task');
    // Leave the tenant as the next tests expect it: no remote agent, on the agents list.
    assert.equal((await server.as(tenantToken).delete('/v1/agents/gateway')).status, 204);
    assert.equal((await server.as(tenantToken).delete('/v1/remote-agents/vendor')).status, 204);
    await tenant.getByRole('link', { name: 'Agents' }).first().click();
  });

  it('tenant: a held task is live on its page and is canceled from it; the task list filters by state and agent', async () => {
    await tenant.getByRole('link', { name: 'helper' }).first().click();
    await tenant.getByRole('link', { name: 'Try it' }).click();
    await tenant.getByLabel('Message').fill('hold');
    await tenant.getByRole('button', { name: 'Send' }).click();
    const turn = tenant.getByTestId('agent-turn').last();
    await turn.locator('.badge.state-working').waitFor();
    await turn.getByRole('link', { name: /timeline of/ }).click();
    await tenant.getByTestId('stream-state').getByText(/live/).waitFor();
    await tenant.getByTestId('task-state').getByText('working').waitFor();
    await tenant.getByRole('button', { name: 'Cancel task' }).click();
    await tenant.getByTestId('task-state').getByText('canceled').waitFor();
    await tenant.locator('[data-event="done"]').waitFor();
    await tenant
      .getByTestId('stream-state')
      .getByText(/complete/)
      .waitFor();
    heldTask = tenant.url().split('/').pop() ?? '';
    // One spelling (A2A's "canceled"), and the reason once.
    assert.equal(await tenant.locator('[data-event="done"] .ev-desc').textContent(), 'Ended: canceled by client');
    const page = (await tenant.locator('main').textContent()) ?? '';
    assert.equal(page.split('canceled by client').length - 1, 1, page);
    assert.doesNotMatch(page, /cancelled/i);
    assert.match((await tenant.getByTestId('task-duration').textContent()) ?? '', /^\d+(\.\d)? (ms|s)$|min/);

    // The chat cancels its working turn itself (A2A REST CancelTask).
    await tenant.getByRole('link', { name: 'helper', exact: true }).click();
    await tenant.getByRole('link', { name: 'Try it' }).click();
    await tenant.getByLabel('Message').fill('hold');
    await tenant.getByRole('button', { name: 'Send' }).click();
    const held = tenant.getByTestId('agent-turn').last();
    await held.locator('.badge.state-working').waitFor();
    await tenant.getByRole('button', { name: 'Cancel task' }).click();
    await held.locator('.badge.state-canceled').waitFor();
    assert.equal(await tenant.getByRole('button', { name: 'Cancel task' }).count(), 0, 'gone once it ended');
    await tenant.getByRole('button', { name: 'Send' }).waitFor();
    assert.doesNotMatch((await held.textContent()) ?? '', /cancelled/i);

    await tenant.getByRole('link', { name: 'Tasks', exact: true }).click();
    await tenant.getByLabel('State').selectOption('canceled');
    await tenant.locator('tbody tr').first().waitFor();
    await rowsBecome(tenant, 2);
    await tenant.getByLabel('State').selectOption('completed');
    await rowsBecome(tenant, 3); // helper's two, and the remote-backed agent's one
    await tenant.getByLabel('State').selectOption('');
    await tenant.getByLabel('Agent').selectOption('helper');
    await rowsBecome(tenant, 4);
    // Each row says what was asked (the first user message) and when the task was created.
    assert.deepEqual((await tenant.getByTestId('request-text').allTextContents()).sort(), [
      'ask',
      'hello from the console, streamed back in pieces',
      'hold',
      'hold',
    ]);
    assert.equal(await tenant.locator('[data-testid="created"] time').count(), 4);
    // Each task's short id tells it apart, though the four were created within the same minute (their ids begin
    // with their creation time) — and each is the end of the task's id.
    const codes = await tenant.locator('tbody tr td:first-child code').allTextContents();
    const hrefs = await tenant
      .locator('tbody tr td:first-child a')
      .evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    assert.equal(new Set(codes).size, 4, codes.join(' '));
    assert.deepEqual(
      codes,
      hrefs.map((h) => h.slice(-8)),
    );
    await shot(tenant, 'tenant-tasks');
  });

  it('task page: after the connection drops it resumes from the last seq (nothing lost, nothing repeated)', async () => {
    // A third tab reaches the server through a proxy the test can cut.
    const proxy = new TcpProxy('127.0.0.1', Number(new URL(server.url).port));
    await proxy.start();
    const origin = `http://127.0.0.1:${proxy.port}`;
    const { ctx, page } = await openTab(browser, origin, offOrigin);
    try {
      const a2a = (body: unknown) =>
        fetch(`${server.url}/v1/a2a/agents/helper/message:send`, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${tenantToken}`,
            'A2A-Version': '1.0',
            'Content-Type': 'application/json',
          },
          body: JSON.stringify(body),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
      const held = await a2a({
        message: { messageId: 'resume-1', role: 'ROLE_USER', parts: [{ text: 'hold' }] },
        configuration: { returnImmediately: true },
      });
      assert.equal(held.status, 200, JSON.stringify(held.body));
      const taskId: string = held.body.task.id;
      await signIn(page, tenantToken, 'Agents');
      await page.goto(`/console/tasks/${taskId}`);
      await page.getByTestId('stream-state').getByText(/live/).waitFor();
      await page.locator('[data-event="stream_start"]').waitFor();

      await proxy.cut();
      await page
        .getByTestId('stream-state')
        .getByText(/reconnecting/)
        .waitFor();
      // While the page is cut off, the task is continued and finishes.
      const more = await a2a({
        message: { messageId: 'resume-2', role: 'ROLE_USER', taskId, parts: [{ text: 'said while you were away' }] },
      });
      assert.equal(more.status, 200, JSON.stringify(more.body));
      assert.equal(more.body.task.status.state, 'TASK_STATE_COMPLETED');
      await proxy.restore();

      await page.locator('[data-event="done"]').waitFor();
      await page
        .getByTestId('stream-state')
        .getByText(/complete/)
        .waitFor();
      assert.equal(
        await page.locator('[data-event="request_received"]').count(),
        2,
        'the first request once, then the continuation',
      );
      assert.equal(await page.locator('[data-event="done"]').count(), 1);
      assert.equal(await page.locator('[data-event="text"] .ev-text-body').textContent(), 'said while you were away');
      await page.getByTestId('task-state').getByText('completed').waitFor();
    } finally {
      await ctx.close();
      await proxy.stop();
    }
  });

  it('task page: a task waiting for input stays live, across a dropped connection, and follows its continuation', async () => {
    const a2a = (body: unknown) =>
      fetch(`${server.url}/v1/a2a/agents/helper/message:send`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${tenantToken}`, 'A2A-Version': '1.0', 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const asked = await a2a({ message: { messageId: 'wait-1', role: 'ROLE_USER', parts: [{ text: 'ask' }] } });
    assert.equal(asked.body.task?.status?.state, 'TASK_STATE_INPUT_REQUIRED', JSON.stringify(asked.body));
    const taskId: string = asked.body.task.id;
    const proxy = new TcpProxy('127.0.0.1', Number(new URL(server.url).port));
    await proxy.start();
    const { ctx, page } = await openTab(browser, `http://127.0.0.1:${proxy.port}`, offOrigin);
    try {
      await signIn(page, tenantToken, 'Agents');
      await page.goto(`/console/tasks/${taskId}`);
      await page.getByTestId('task-state').getByText('input-required').waitFor();
      await page.locator('[data-event="input_required"]').waitFor();
      await page.getByTestId('stream-state').getByText(/live/).waitFor();
      // The connection drops while the task waits: the page comes back to it rather than calling it complete.
      await proxy.cut();
      await page
        .getByTestId('stream-state')
        .getByText(/reconnecting/)
        .waitFor();
      await proxy.restore();
      await page.getByTestId('stream-state').getByText(/live/).waitFor();

      // Answered elsewhere (another client): the open page follows the continuation without a reload.
      const answered = await a2a({
        message: { messageId: 'wait-2', role: 'ROLE_USER', taskId, parts: [{ text: 'answered from elsewhere' }] },
      });
      assert.equal(answered.body.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(answered.body));
      await page.locator('[data-event="done"]').waitFor();
      await page.getByTestId('task-state').getByText('completed').waitFor();
      await page
        .getByTestId('stream-state')
        .getByText(/complete/)
        .waitFor();
      assert.equal(await page.locator('[data-event="request_received"]').count(), 2);
      assert.equal(await page.locator('[data-event="input_required"]').count(), 1, 'nothing repeated');
      assert.match((await page.locator('[data-event="text"] .ev-text-body').last().textContent()) ?? '', /answered/);
    } finally {
      await ctx.close();
      await proxy.stop();
    }
  });

  it('task page: tool calls, a sub-agent reply and a file in the timeline', async () => {
    const api = server.as(tenantToken);
    assert.equal((await api.post('/v1/agents', { id: 'parrot' })).status, 201);
    assert.equal((await api.post('/v1/agents', { id: 'toolsmith', model: 'openai/toolsmith' })).status, 201);
    const res = await fetch(`${server.url}/v1/a2a/agents/toolsmith/message:send`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tenantToken}`, 'A2A-Version': '1.0', 'Content-Type': 'application/json' },
      body: JSON.stringify({
        message: { messageId: 'tools-1', role: 'ROLE_USER', parts: [{ text: 'use your tools' }] },
      }),
    });
    const body = (await res.json()) as any;
    assert.equal(body.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(body));
    await tenant.goto(`/console/tasks/${body.task.id}`);
    await tenant.locator('[data-event="done"]').waitFor();
    const tools = await tenant.locator('[data-event="tool_call"]').allTextContents();
    assert.equal(tools.length, 2, tools.join('\n'));
    assert.match(tools.join('\n'), /Tool \/agent ok/);
    assert.match(tools.join('\n'), /Tool \/write ok/);
    const timeline = (await tenant.locator('ol.timeline').textContent()) ?? '';
    assert.match(
      (await tenant.locator('[data-event="sub_agent_response"] .ev-desc').textContent()) ?? timeline,
      /Sub-agent parrot \(depth 1\) replied: [\s\S]*repeat after me$/,
    );
    // Every entry has its time (and how far into the task it came); tool calls and the sub-agent say how long
    // they ran; the task its whole duration.
    const entries = await tenant.locator('ol.timeline > li').count();
    assert.equal(await tenant.locator('ol.timeline > li time.ev-time').count(), entries);
    assert.match((await tenant.locator('ol.timeline > li time.ev-time').first().textContent()) ?? '', /\(\+0 ms\)$/);
    for (const ev of ['tool_call', 'sub_agent_response']) {
      for (const took of await tenant.locator(`[data-event="${ev}"] [data-testid="took"]`).allTextContents()) {
        assert.match(took, /took \d+(\.\d)? (ms|s)$/, ev);
      }
    }
    assert.equal(await tenant.locator('[data-event="tool_call"] [data-testid="took"]').count(), 2);
    assert.equal(await tenant.locator('[data-event="sub_agent_response"] [data-testid="took"]').count(), 1);
    assert.match((await tenant.getByTestId('task-duration').textContent()) ?? '', /\d+(\.\d)? (ms|s)$/);
    assert.match((await tenant.locator('[data-event="file"]').textContent()) ?? '', /notes\/todo\.md \(text\/markdown/);
    await tenant.locator('[data-event="file"] summary').click();
    assert.equal(await tenant.locator('[data-event="file"] pre').textContent(), '- try the console');
    // The sub-agent's own streamed text is indented under the parent's.
    assert.ok((await tenant.locator('[data-event="text"].depth-1').count()) >= 1, 'depth-1 text');
    // The page has read the whole log and stopped following the task (it makes no more requests).
    await tenant
      .getByTestId('stream-state')
      .getByText(/^complete \(seq \d+\)$/)
      .waitFor();
    await shot(tenant, 'tenant-task-tools');
  });

  it('signing in from a deep link opens that page (a page of the other kind of token opens the start page)', async () => {
    assert.ok(heldTask, 'the held task of an earlier test');
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      for (const [path, heading] of [
        [`/console/tasks/${heldTask}`, `Task ${heldTask.slice(-8)}`],
        ['/console/agents/helper', 'Agent helper'],
        ['/console/tasks?state=canceled', 'Tasks'],
        ['/console/audit', 'Overview'], // an admin page: a tenant starts at its own
      ] as const) {
        await page.goto(path);
        await page.getByLabel('Token').fill(tenantToken);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { level: 1, name: heading }).waitFor();
        if (path.includes('state=')) await rowsBecome(page, 2);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByLabel('Token').waitFor();
      }
      await page.goto('/console/audit');
      await page.getByLabel('Token').fill(server.adminToken);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    } finally {
      await ctx.close();
    }
  });

  it('tenant: a new tab of the console gets the session from an open one; signing out in one signs out both', async () => {
    // The first tab on a page that has loaded all it loads (the next test's rotation must find it idle, and its
    // Agents link must load something).
    await tenant.getByRole('link', { name: 'Agents', exact: true }).click();
    await tenant.getByRole('link', { name: 'New agent' }).click();
    const modelsLoaded = tenant.locator('#f-model-list option[value="echo"]');
    await modelsLoaded.waitFor({ state: 'attached' });
    const second = await tenantCtx.newPage();
    second.setDefaultTimeout(15_000);
    try {
      await second.goto('/console/tasks');
      await second.getByRole('heading', { level: 1, name: 'Tasks' }).waitFor();
      assert.equal(await second.locator('header .who-name').textContent(), 'tenant acme');
      // Handed over in the browser (BroadcastChannel), kept in the new tab's sessionStorage: no cookie, no
      // localStorage.
      assert.deepEqual(
        await second.evaluate(
          '({ session: sessionStorage.length, local: localStorage.length, cookie: document.cookie })',
        ),
        { session: 1, local: 0, cookie: '' },
      );
      assert.deepEqual(await tenantCtx.cookies(), []);
      await second.getByRole('button', { name: 'Sign out' }).click();
      await second.getByLabel('Token').waitFor();
      await tenant.getByText('Signed out in another tab.').waitFor();
      assert.equal(await tenant.evaluate('sessionStorage.length'), 0);
      // A signed-in tab holds the presence lock a new tab looks for before it asks; signed out, no tab holds it.
      const presence = () =>
        second.evaluate<string[]>(
          'navigator.locks.query().then((s) => s.held.map((l) => l.name).filter((n) => n.startsWith("arbiter.")))',
        );
      assert.deepEqual(await presence(), []);
      // Signing in again in one tab signs in the other (it was on the sign-in page), on the page it showed.
      await tenant.getByLabel('Token').fill(tenantToken);
      await tenant.getByRole('button', { name: 'Sign in' }).click();
      await second.getByRole('heading', { level: 1, name: 'Tasks' }).waitFor();
      await tenant.getByRole('heading', { level: 1, name: 'New agent' }).waitFor();
      await modelsLoaded.waitFor({ state: 'attached' });
      // (The lock is granted a moment after the page shows.)
      await waitFor(async () => ((await presence()).length === 2 ? true : undefined)).catch(() => undefined);
      assert.deepEqual(await presence(), ['arbiter.console.signed-in', 'arbiter.console.signed-in']);
    } finally {
      await second.close();
    }
  });

  it('admin: rotating the tenant token signs the old one out; the new one works; the token is never stored in a cookie or localStorage', async () => {
    const storage = await tenant.evaluate(
      '({ session: sessionStorage.length, local: localStorage.length, cookie: document.cookie })',
    );
    assert.deepEqual(storage, { session: 1, local: 0, cookie: '' });
    assert.deepEqual(await tenantCtx.cookies(), []);

    await admin.getByRole('link', { name: 'Tenants' }).click();
    await admin
      .locator('tr[data-tenant="acme"]')
      .getByRole('button', { name: /Tokens/ })
      .click();
    await admin.getByRole('button', { name: /Rotate/ }).click();
    const fresh = (await admin.locator('.once pre code').textContent()) ?? '';
    assert.match(fresh, /^atr_/);
    assert.notEqual(fresh, tenantToken);
    await admin.getByRole('cell', { name: 'revoked' }).waitFor();

    assert.equal((await server.as(tenantToken).get('/v1/agents')).status, 401, 'the old token is refused');
    await tenant.getByRole('link', { name: 'Agents', exact: true }).click();
    await tenant.getByText(/Signed out: invalid or revoked token/).waitFor();
    await tenant.getByLabel('Token').fill(tenantToken);
    await tenant.getByRole('button', { name: 'Sign in' }).click();
    await tenant.getByText('This token is not valid').waitFor();
    await signIn(tenant, fresh, 'Agents');

    // Delete from the agent page (the confirmation is accepted).
    await tenant.getByRole('link', { name: 'helper' }).click();
    await tenant.getByRole('button', { name: 'Delete agent' }).click();
    await tenant.getByRole('heading', { level: 1, name: 'Agents' }).waitFor();
    assert.equal((await server.as(fresh).get('/v1/agents/helper')).status, 404);

    await admin.getByRole('link', { name: 'Audit log' }).click();
    await admin.getByRole('cell', { name: 'token.rotate' }).waitFor();
    assert.ok(!(await admin.content()).includes(fresh), 'the audit log never shows a token');
    assert.ok(tenantId.length > 0);
  });

  it('a token with agents:read only sees the agents read-only: no create, edit, delete, chat or tasks', async () => {
    const full = await tokenWith(['a2a:invoke', 'agents:read', 'agents:write', 'tasks:read']);
    assert.equal((await server.as(full).post('/v1/agents', { id: 'clerk', role: 'Scoped test agent' })).status, 201);
    const reader = await tokenWith(['agents:read']);
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(page, reader, 'Agents');
      assert.equal(await page.getByTestId('actor').textContent(), `token:${reader.slice(0, 12)}`);
      assert.equal(await page.getByTestId('scopes').textContent(), 'agents:read');
      await page.getByRole('link', { name: 'clerk' }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'New agent' }).count(), 0);
      await page.getByTestId('read-only').getByText('agents:write').waitFor();
      assert.equal(await page.getByRole('link', { name: 'Tasks', exact: true }).count(), 0, 'no Tasks page');

      await page.getByRole('link', { name: 'clerk' }).click();
      await page.getByRole('heading', { level: 1, name: 'Agent clerk' }).waitFor();
      await page.locator('pre.card-json').waitFor();
      await page.getByTestId('read-only').waitFor();
      assert.match((await page.locator('main pre').first().textContent()) ?? '', /Scoped test agent/);
      for (const name of ['Delete agent', 'Save changes', 'Create agent']) {
        assert.equal(await page.getByRole('button', { name }).count(), 0, name);
      }
      for (const name of ['Try it', 'Its tasks']) assert.equal(await page.getByRole('link', { name }).count(), 0, name);
      await shot(page, 'scoped-agents-read');

      // A page it may not use, opened by its URL, says which scope it lacks.
      await page.goto('/console/agents/new');
      await page.getByTestId('not-allowed').getByText('agents:write').waitFor();
      assert.equal(await page.getByRole('button', { name: 'Create agent' }).count(), 0);
      await page.goto('/console/agents/clerk/chat');
      await page.getByTestId('not-allowed').getByText('a2a:invoke').waitFor();
      assert.equal(await page.getByLabel('Message').count(), 0, 'no composer');
    } finally {
      await ctx.close();
    }

    // agents:write alone: the constitution to edit, and the card (every tenant scope reads it), no refusal shown.
    const writer = await tokenWith(['agents:write']);
    const tab = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(tab.page, writer, 'Agents');
      await tab.page.goto('/console/agents/clerk');
      await tab.page.getByRole('button', { name: 'Save changes' }).waitFor();
      await tab.page.locator('pre.card-json').waitFor();
      assert.match((await tab.page.locator('pre.card-json').textContent()) ?? '', /"supportedInterfaces"/);
      assert.equal(await tab.page.getByTestId('missing-scope').count(), 0);
    } finally {
      await tab.ctx.close();
    }
  });

  it('tenant: adds a remote agent with a bearer token (shown as set), edits its url, deletes it; agents:read only reads', async () => {
    const secret = `remote-bearer-${randomBytes(12).toString('hex')}`;
    const writer = await tokenWith(['agents:read', 'agents:write']);
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(page, writer, 'Agents');
      await page.getByRole('link', { name: 'Remote agents' }).click();
      await page.getByRole('heading', { level: 1, name: 'Remote agents' }).waitFor();
      await page.getByRole('link', { name: 'New remote agent' }).click();
      await page.getByRole('heading', { level: 1, name: 'New remote agent' }).waitFor();
      await page.getByLabel('Name').fill('peer');
      await page.getByLabel('URL', { exact: true }).fill('ftp://peer.example.com/a2a');
      await page.getByLabel('Type').selectOption('bearer');
      const token = page.getByLabel('Token');
      assert.equal(await token.getAttribute('type'), 'password', 'a secret is typed into a password field');
      // A secret left out is asked for at its field, before any call.
      await page.getByRole('button', { name: 'Add remote agent' }).click();
      await page.locator('.field-error[data-field="auth.token"]').waitFor();
      await token.fill(secret);
      // The server's 400 names the field: shown on it, and it takes the focus.
      await page.getByRole('button', { name: 'Add remote agent' }).click();
      await page.locator('.field-error[data-field="url"]').waitFor();
      assert.equal(await page.evaluate('document.activeElement.id'), 'r-url');
      await page.getByLabel('URL', { exact: true }).fill('https://peer.example.com/a2a');
      await page.getByRole('button', { name: 'Add remote agent' }).click();
      await page.getByRole('heading', { level: 1, name: 'Remote agent peer' }).waitFor();
      await page.getByTestId('secrets-note').getByText('every secret must be given again').waitFor();
      assert.equal(await page.getByLabel('Token').inputValue(), '', 'a stored secret is never filled in');

      await page.getByRole('link', { name: 'All remote agents' }).click();
      const row = page.locator('tr[data-entry="peer"]');
      await row.waitFor();
      assert.match((await row.textContent()) ?? '', /https:\/\/peer\.example\.com\/a2a.*bearer.*token: set/);
      assert.ok(!(await page.content()).includes(secret), 'the secret is not on the page');
      await shot(page, 'remote-agents');

      // Editing the url within its origin keeps the credentials (auth is not sent); pointing it at another origin,
      // or changing the credentials, asks for the secret again.
      await row.getByRole('link', { name: 'peer' }).click();
      await page.getByLabel('URL', { exact: true }).fill('https://peer.example.com/v2/a2a');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByRole('status').getByText('Saved.').waitFor();
      const stored = await server.as(writer).get('/v1/remote-agents/peer');
      assert.equal(stored.body.url, 'https://peer.example.com/v2/a2a');
      assert.deepEqual(stored.body.auth, { type: 'bearer', token: 'set' }, 'the secret is kept');
      await page.getByLabel('URL', { exact: true }).fill('https://peer2.example.com/a2a');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page
        .locator('.field-error[data-field="auth.token"]')
        .getByText(/another origin/)
        .waitFor();
      assert.equal((await server.as(writer).get('/v1/remote-agents/peer')).body.url, 'https://peer.example.com/v2/a2a');
      await page.getByLabel('Token').fill(`${secret}-2`);
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByRole('status').getByText('Saved.').waitFor();
      const moved = await server.as(writer).get('/v1/remote-agents/peer');
      assert.equal(moved.body.url, 'https://peer2.example.com/a2a');
      assert.deepEqual(moved.body.auth, { type: 'bearer', token: 'set' });
      await page.getByLabel('Type').selectOption('header');
      await page.getByLabel('Header name').fill('X-Api-Key');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page
        .locator('.field-error[data-field="auth.value"]')
        .getByText(/given again/)
        .waitFor();
      assert.deepEqual((await server.as(writer).get('/v1/remote-agents/peer')).body.auth, {
        type: 'bearer',
        token: 'set',
      });

      // agents:read only: the list, no controls that change anything.
      const reader = await tokenWith(['agents:read']);
      const tab = await openTab(browser, server.url, offOrigin);
      try {
        await signIn(tab.page, reader, 'Agents');
        await tab.page.getByRole('link', { name: 'MCP servers' }).waitFor();
        await tab.page.getByRole('link', { name: 'Remote agents' }).click();
        await tab.page.locator('tr[data-entry="peer"]').getByText('https://peer2.example.com/a2a').waitFor();
        await tab.page.getByTestId('read-only').getByText('agents:write').waitFor();
        assert.equal(await tab.page.getByRole('link', { name: 'New remote agent' }).count(), 0);
        await tab.page.getByRole('link', { name: 'peer', exact: true }).click();
        await tab.page.getByRole('heading', { level: 1, name: 'Remote agent peer' }).waitFor();
        await tab.page.getByTestId('read-only').waitFor();
        for (const name of ['Delete remote agent', 'Save changes']) {
          assert.equal(await tab.page.getByRole('button', { name }).count(), 0, name);
        }
        await tab.page.goto('/console/remote-agents/new');
        await tab.page.getByTestId('not-allowed').getByText('agents:write').waitFor();
      } finally {
        await tab.ctx.close();
      }

      // Delete, with a confirm (the tab accepts dialogs).
      await page.getByRole('button', { name: 'Delete remote agent' }).click();
      await page.getByRole('heading', { level: 1, name: 'Remote agents' }).waitFor();
      await page.getByText('None yet.').waitFor();
      assert.equal((await server.as(writer).get('/v1/remote-agents/peer')).status, 404);
    } finally {
      await ctx.close();
    }
    // A credential with neither agents scope has no such pages in its navigation.
    const invoker = await tokenWith(['a2a:invoke']);
    const tab = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(tab.page, invoker, 'Agents');
      for (const name of ['Remote agents', 'MCP servers']) {
        assert.equal(await tab.page.getByRole('link', { name }).count(), 0, name);
      }
    } finally {
      await tab.ctx.close();
    }
  });

  it('a token with a2a:invoke only chats with an agent by its id, but cannot read or edit agents', async () => {
    const invoker = await tokenWith(['a2a:invoke']);
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(page, invoker, 'Agents');
      assert.equal(await page.getByTestId('scopes').textContent(), 'a2a:invoke');
      await page.getByTestId('not-allowed').getByText('agents:read or agents:write').waitFor();
      assert.equal(await page.locator('table').count(), 0, 'no agent list');
      assert.equal(await page.getByRole('link', { name: 'New agent' }).count(), 0);
      await page.getByLabel('Agent id').fill('clerk');
      await page.getByRole('button', { name: 'Chat with it' }).click();
      await page.getByRole('heading', { level: 1, name: 'Try clerk' }).waitFor();
      await page.getByLabel('Message').fill('only invoking');
      await page.getByRole('button', { name: 'Send' }).click();
      const turn = page.getByTestId('agent-turn').last();
      await turn.locator('.badge.state-completed').waitFor();
      assert.equal(await turn.locator('.reply').textContent(), 'only invoking');
      await shot(page, 'scoped-invoke-chat');

      // The agent's page: its card and a way to try it, no constitution, nothing to edit or delete.
      await page.goto('/console/agents/clerk');
      await page.locator('pre.card-json').waitFor();
      await page.getByRole('link', { name: 'Try it' }).waitFor();
      await page.getByTestId('not-allowed').getByText('agents:read or agents:write').waitFor();
      for (const name of ['Delete agent', 'Save changes']) {
        assert.equal(await page.getByRole('button', { name }).count(), 0, name);
      }
      // Its tasks it may read (a2a:invoke): the agent filter takes an id, as the agents cannot be listed.
      await page.getByRole('link', { name: 'Tasks', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Tasks' }).waitFor();
      assert.equal(await page.locator('select#flt-agent').count(), 0);
      await page.getByTestId('request-text').getByText('only invoking').waitFor();
    } finally {
      await ctx.close();
    }
  });

  it('an auditor operator sees the admin views, read-only', async () => {
    const created = await server.admin.post('/v1/admin/operators', { name: 'audit', role: 'auditor' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      await signIn(page, created.body.token as string, 'Tenants');
      assert.equal(await page.locator('header .who-name').textContent(), 'auditor');
      assert.equal(await page.getByTestId('actor').textContent(), 'operator:audit');
      assert.equal(await page.getByTestId('scopes').textContent(), 'read-only');
      const acme = page.locator('tr[data-tenant="acme"]');
      await acme.waitFor();
      await page.getByTestId('read-only').waitFor();
      assert.equal(await page.getByLabel('New tenant name').count(), 0);
      for (const name of ['Create tenant', /^Disable/, /^Enable/]) {
        assert.equal(await page.getByRole('button', { name }).count(), 0, String(name));
      }
      // Tokens: listed with their scopes, nothing to rotate, add or revoke.
      await acme.getByRole('button', { name: /Tokens/ }).click();
      const tokens = page.getByRole('region', { name: 'Tokens of acme' });
      await tokens.getByTestId('token-scopes').getByText('agents:read', { exact: true }).first().waitFor();
      for (const name of [/Rotate/, 'Add a token', /Revoke/]) {
        assert.equal(await page.getByRole('button', { name }).count(), 0, String(name));
      }
      await shot(page, 'auditor-tenants');
      await page.getByRole('link', { name: 'Audit log' }).click();
      await page.getByRole('cell', { name: 'operator.create' }).waitFor();
      await page.getByTestId('audit-actor').getByText('root', { exact: true }).first().waitFor();
      await page.getByRole('link', { name: 'Registries' }).click();
      await page.getByRole('heading', { name: 'Remote A2A agents' }).waitFor();
    } finally {
      await ctx.close();
    }
  });

  it('signs in with a JWT of a trusted issuer, shows its expiry, and says so plainly when it has expired', async () => {
    const trusted = await server.admin.post('/v1/admin/issuers', {
      issuer: idp.issuer,
      audiences: ['arbiter'],
      tenant_claim: 'org',
      clock_skew_seconds: 0,
    });
    assert.equal(trusted.status, 201, JSON.stringify(trusted.body));
    assert.equal((await server.admin.patch(`/v1/admin/tenants/${tenantId}`, { external_id: 'acme' })).status, 200);
    const jwt = await idp.token('acme-dashboard', { scope: 'agents:read tasks:read' });
    const { ctx, page } = await openTab(browser, server.url, offOrigin);
    try {
      await page.goto('/console/');
      // Pasted with its "Bearer " prefix, as copied from a curl line: the console takes the token.
      await page.getByLabel('Token').fill(`Bearer ${jwt}`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await page.getByRole('link', { name: 'Agents', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Agents' }).waitFor();
      assert.equal(await page.locator('header .who-name').textContent(), 'tenant acme');
      assert.equal(await page.getByTestId('actor').textContent(), `jwt:${idp.issuer}|acme-dashboard`);
      assert.equal(await page.getByTestId('scopes').textContent(), 'agents:read tasks:read');
      await page.getByTestId('expires').locator('time').waitFor();
      await page.getByRole('link', { name: 'clerk' }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'New agent' }).count(), 0);
      await shot(page, 'jwt-signed-in');

      // The same identity's token once it has expired (signed with the IdP's key, `exp` an hour ago): the tab
      // holds it as if it had expired while signed in, and its next call is refused.
      const now = Math.floor(Date.now() / 1000);
      const expired = await new SignJWT({ org: 'acme', scope: 'agents:read tasks:read', client_id: 'acme-dashboard' })
        .setProtectedHeader({ alg: 'RS256', kid: idpKey.kid, typ: 'at+jwt' })
        .setIssuer(idp.issuer)
        .setAudience('arbiter')
        .setSubject('acme-dashboard')
        .setIssuedAt(now - 7200)
        .setExpirationTime(now - 3600)
        .sign(await importJWK(idpKey, 'RS256'));
      const refused = await server.as(expired).get('/v1/agents');
      assert.equal(refused.status, 401);
      assert.match(JSON.stringify(refused.body), /expired/);
      const k = JSON.stringify(SESSION_KEY);
      await page.evaluate(
        `sessionStorage.setItem(${k}, JSON.stringify({ ...JSON.parse(sessionStorage.getItem(${k})), token: ${JSON.stringify(expired)} }))`,
      );
      await page.goto('/console/agents/clerk');
      const notice = page.getByTestId('signin-expired');
      await notice.getByText('Your sign-in expired').waitFor();
      assert.match((await notice.textContent()) ?? '', /paste a\s+fresh token/i);
      assert.match((await notice.textContent()) ?? '', /acme-dashboard/);
      await shot(page, 'jwt-expired');
      // Signing in with that expired token says why; a fresh one continues on the page it was on.
      await page.getByLabel('Token').fill(expired);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('This token has expired').waitFor();
      await page.getByLabel('Token').fill(await idp.token('acme-dashboard', { scope: 'agents:read tasks:read' }));
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Agent clerk' }).waitFor();
    } finally {
      await ctx.close();
    }
  });

  it('made no request off the page origin', () => {
    assert.deepEqual(offOrigin, []);
  });
});
