import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/app-config.js';

describe('configuration', () => {
  it('defaults: 127.0.0.1:8080, ~/.arbiter, embedded database', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.bind, '127.0.0.1');
    assert.equal(c.home, join(homedir(), '.arbiter'));
    assert.equal(c.usesEmbeddedDatabase, true);
    assert.equal(c.embeddedDataDir, join(homedir(), '.arbiter', 'pgdata'));
    assert.equal(c.maxBodyBytes, 1024 * 1024);
  });

  it('reads the environment, flags win over PORT/BIND', () => {
    const c = loadConfig(
      { PORT: '9000', BIND: '0.0.0.0', DATABASE_URL: 'postgres://u:pw@db:5432/x', ARBITER_TRUST_PROXY: 'true' },
      ['--port=9100'],
    );
    assert.equal(c.port, 9100);
    assert.equal(c.bind, '0.0.0.0');
    assert.equal(c.usesEmbeddedDatabase, false);
    assert.equal(c.trustProxy, true);
  });

  it('reports every bad variable at once, by name, without echoing secrets', () => {
    const secret = 'not-an-admin-token-but-secret';
    try {
      loadConfig({
        PORT: '-1',
        ARBITER_ADMIN_TOKEN: secret,
        ARBITER_DB_POOL_SIZE: 'many',
        ARBITER_TRUST_PROXY: 'maybe',
      });
      assert.fail('should have thrown');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      const text = err.message;
      for (const name of ['PORT', 'ARBITER_ADMIN_TOKEN', 'ARBITER_DB_POOL_SIZE', 'ARBITER_TRUST_PROXY']) {
        assert.ok(text.includes(name), name);
      }
      assert.equal(err.problems.length, 4);
      assert.ok(!text.includes(secret));
    }
  });

  // Each refusal names its variable (or flag) and says what it must be, once: several validators of one variable
  // failing say so once. (The process test checks that `npm start` prints it as one JSON line and exits 2.)
  const refusals: [Record<string, string>, string[], RegExp][] = [
    [{ PORT: 'abc' }, [], /PORT must be an integer/],
    [{ PORT: '70000' }, [], /PORT must be an integer/],
    [{}, ['--port', 'x'], /--port must be an integer/],
    [{ BIND: 'bad host!' }, [], /BIND must be a host name/],
    [{ ARBITER_ADMIN_TOKEN: 'secret' }, [], /ARBITER_ADMIN_TOKEN must be "adm_"/],
    [{ DATABASE_URL: 'mysql://x' }, [], /DATABASE_URL must be a postgres/],
    [{ LOG_LEVEL: 'loud' }, [], /LOG_LEVEL must be one of/],
    [{ ARBITER_MAX_BODY_BYTES: '1' }, [], /ARBITER_MAX_BODY_BYTES must be an integer/],
    [
      { ARBITER_DEFAULT_MODEL: 'foo/bar' },
      [],
      /ARBITER_DEFAULT_MODEL must be echo, anthropic\/<model>.*\(got "foo\/bar"\)/,
    ],
    [{}, ['--verbose'], /Unknown option '--verbose'/],
    [
      { ARBITER_ADMIN_TOKEN: `adm_${'x'.repeat(40)}`, ARBITER_ADMIN_TOKEN_FILE: '/run/secrets/admin' },
      [],
      /set ARBITER_ADMIN_TOKEN or ARBITER_ADMIN_TOKEN_FILE, not both/,
    ],
  ];
  for (const [env, args, expected] of refusals) {
    it(`refuses ${JSON.stringify(env)} ${args.join(' ')}: one message, naming the variable once`, () => {
      assert.throws(
        () => loadConfig(env, args),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError, String(err));
          assert.match(err.message, expected);
          assert.ok(!/; must be/.test(err.message), err.message);
          if (env.ARBITER_ADMIN_TOKEN) assert.ok(!err.message.includes(env.ARBITER_ADMIN_TOKEN), 'not echoed');
          return true;
        },
      );
    });
  }

  it('describe() hides the database password and the admin token', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://u:hunter2@db/x', ARBITER_ADMIN_TOKEN: `adm_${'a'.repeat(40)}` });
    const text = JSON.stringify(c.describe());
    assert.ok(!text.includes('hunter2'));
    assert.ok(!text.includes('a'.repeat(40)));
  });

  it('an empty variable counts as unset', () => {
    assert.equal(loadConfig({ PORT: '', DATABASE_URL: '' }).port, 8080);
    assert.equal(loadConfig({ DATABASE_URL: '' }).usesEmbeddedDatabase, true);
  });

  it('ARBITER_DEFAULT_MODEL must name a known provider (or a bare model name that routes to one)', () => {
    for (const ok of [
      'echo',
      'anthropic/claude-sonnet-4-5',
      'claude-3-5-haiku-latest',
      'openai/gpt-4o-mini',
      'gpt-4o',
      'o3-mini',
      'ollama/llama3.2',
      'openrouter/meta-llama/llama-3.1-8b-instruct',
    ]) {
      assert.equal(loadConfig({ ARBITER_DEFAULT_MODEL: ok }).defaultModel, ok);
    }
    for (const bad of ['foo/bar', 'llama3', 'openai/', 'has space']) {
      assert.throws(
        () => loadConfig({ ARBITER_DEFAULT_MODEL: bad }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.problems.length === 1 &&
          /^ARBITER_DEFAULT_MODEL must be echo, anthropic\/<model>/.test(err.problems[0]),
        bad,
      );
    }
  });

  it('provider base URLs, OPENROUTER_BASE_URL included, are validated like each other', () => {
    assert.equal(loadConfig({}).openrouterBaseUrl, 'https://openrouter.ai/api/v1');
    assert.equal(
      loadConfig({ OPENROUTER_BASE_URL: 'http://127.0.0.1:9/v1' }).openrouterBaseUrl,
      'http://127.0.0.1:9/v1',
    );
    for (const name of ['ANTHROPIC_BASE_URL', 'OPENAI_BASE_URL', 'OLLAMA_HOST', 'OPENROUTER_BASE_URL']) {
      assert.throws(
        () => loadConfig({ [name]: 'ftp://x' }),
        (err: unknown) => err instanceof ConfigError && err.problems[0].startsWith(`${name} must be an http(s) URL`),
        name,
      );
    }
  });
});
