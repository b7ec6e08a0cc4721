import '../helpers/quiet.js';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { startEngine } from '../helpers/engine.js';
import { ownDatabasePrefix, REAL_POSTGRES } from '../helpers/database.js';
import { startTestServer } from '../helpers/server.js';

/** The databases this test process has made (`freshDatabase` names them with `ownDatabasePrefix`). */
async function ownDatabases(): Promise<string[]> {
  const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await c.connect();
  try {
    const { rows } = await c.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1',
      [ownDatabasePrefix()],
    );
    return rows.map((r) => r.datname);
  } finally {
    await c.end();
  }
}

describe(`the test servers' helpers clean up after a start that fails (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let dir: string;
  let keyFile: string;
  let tmp: string;
  const previousTmp = process.env.TMPDIR;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'arbiter-helpers-'));
    // A setting that stops the start: card signing refuses a symmetric key.
    keyFile = join(dir, 'oct.jwk');
    writeFileSync(keyFile, JSON.stringify({ kty: 'oct', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0', kid: 'x' }));
    // The homes the helpers make go here, where nothing else in this process writes.
    tmp = mkdtempSync(join(dir, 'tmp-'));
    process.env.TMPDIR = tmp;
  });
  after(() => {
    if (previousTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmp;
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [name, start] of [
    ['startTestServer', () => startTestServer({ env: { ARBITER_CARD_SIGNING_KEY_FILE: keyFile } })],
    ['startEngine', () => startEngine({ ARBITER_CARD_SIGNING_KEY_FILE: keyFile })],
  ] as const) {
    it(`${name}: the start's error, and neither its database nor its home left`, async () => {
      const before = REAL_POSTGRES ? await ownDatabases() : [];
      await assert.rejects(start(), /ARBITER_CARD_SIGNING_KEY_FILE .*symmetric keys/);
      assert.deepEqual(readdirSync(tmp), [], 'the home it made is removed');
      if (REAL_POSTGRES) assert.deepEqual(await ownDatabases(), before, 'the database it made is dropped');
    });
  }
});
