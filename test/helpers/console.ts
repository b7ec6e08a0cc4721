import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CONSOLE_DIR } from '../../src/console/console.module.js';
import { PATIENCE_MS } from './patience.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The newest modification time under `dir` (the console's sources). */
function newest(dir: string): number {
  return Math.max(
    ...readdirSync(dir).map((n) => {
      const p = join(dir, n);
      const st = statSync(p);
      return st.isDirectory() ? newest(p) : st.mtimeMs;
    }),
  );
}

/** `npm test` compiles the server only: build the console when it is missing or older than its sources. */
export function ensureConsoleBuilt(): void {
  const index = join(CONSOLE_DIR, 'index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= newest(join(process.cwd(), 'console', 'src'))) return;
  const r = spawnSync(
    process.execPath,
    ['node_modules/vite/bin/vite.js', 'build', '--config', 'console/vite.config.ts'],
    {
      stdio: 'inherit',
    },
  );
  assert.equal(r.status, 0, 'the console builds');
}

/** A tenant or admin tab; every request that would leave the server's origin is refused and recorded. */
export async function openTab(
  browser: Browser,
  origin: string,
  offOrigin: string[],
): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 768 }, baseURL: origin });
  await ctx.route('**/*', async (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`) || url.startsWith('data:')) return route.continue();
    offOrigin.push(url);
    return route.abort();
  });
  const page = await ctx.newPage();
  // A bound for a broken page, not a speed: a loaded machine may take its time (test/helpers/patience.ts).
  page.setDefaultTimeout(PATIENCE_MS);
  page.on('dialog', (d) => void d.accept());
  return { ctx, page };
}

export async function signIn(page: Page, token: string, heading: string): Promise<void> {
  await page.goto('/console/');
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const escaped = heading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  await page.getByRole('heading', { level: 1, name: new RegExp(`^(${escaped}|Overview)$`) }).waitFor();
  // A credential that may read the overview starts there: go on to the page asked for.
  if (heading !== 'Overview' && (await page.getByRole('heading', { level: 1 }).textContent()) === 'Overview') {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: heading, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }
}

/** Headless Chromium as the browser tests run it (the system's, no download; nothing in the background). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
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
}

/**
 * When the browser tests are skipped: outside CI, on a machine without Chromium (in CI a missing browser fails
 * them); and when `TEST_BROWSER=off` — `.ci/run` runs the suite twice, once per database, and the console's
 * pages are the same on both, so its second pass leaves them out.
 */
export const SKIP_BROWSER =
  process.env.TEST_BROWSER === 'off'
    ? 'browser tests off (TEST_BROWSER=off)'
    : !process.env.CI && !existsSync(CHROMIUM)
      ? `no Chromium at ${CHROMIUM}`
      : false;
