import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig, loadConfig } from '../../src/config/app-config.js';
import { readArea } from '../../src/config/settings/read-settings.js';
import { settingsOf } from '../../src/config/settings/setting-registry.js';
import {
  BoolEnv,
  BytesEnv,
  DurationEnv,
  EnumEnv,
  HostListEnv,
  IntEnv,
  ModelEnv,
  PatternEnv,
  TextEnv,
  UrlEnv,
} from '../../src/config/settings/setting.decorators.js';
import { SETTINGS_AREAS } from '../../src/config/settings/settings-areas.js';

/** One setting of every kind, as an area class declares them. */
class Sample {
  @IntEnv('T_COUNT', 1, 10, { flag: '--count N' }) count = 5;
  @DurationEnv('T_WAIT_MS', 100, 1000) waitMs = 200;
  @BytesEnv('T_SIZE', 1024, 4096) size = 2048;
  @BoolEnv('T_ON') on = false;
  @EnumEnv('T_COLOR', ['red', 'blue']) color = 'red';
  @UrlEnv('T_URL', 'base') url = 'https://example.com';
  @PatternEnv('T_ADDR', /^\w+:\d+$/, 'must be host:port') addr?: string;
  @HostListEnv('T_HOSTS') hosts = '';
  @TextEnv('T_KEY', { minLength: 8, secret: true }) key?: string;
  @ModelEnv('T_MODEL') model = 'echo';
}

const read = (env: Record<string, string>, flags: Record<string, string> = {}) => readArea(Sample, env, flags);

describe('configuration: the setting decorators', () => {
  it('unset or empty variables keep the defaults', () => {
    const { values, problems } = read({ T_COUNT: '', T_ON: '' });
    assert.deepEqual(problems, []);
    assert.deepEqual({ ...values }, { ...new Sample() });
  });

  it('@IntEnv, @DurationEnv, @BytesEnv: integers within the range, one message for every way to miss it', () => {
    const { values } = read({ T_COUNT: ' 10 ', T_WAIT_MS: '100', T_SIZE: '4096' });
    assert.deepEqual([values.count, values.waitMs, values.size], [10, 100, 4096]);
    for (const bad of ['0', '11', '1.5', 'many', '-3']) {
      assert.deepEqual(read({ T_COUNT: bad }).problems, [
        `T_COUNT must be an integer between 1 and 10 (got ${JSON.stringify(bad)})`,
      ]);
    }
    assert.deepEqual(read({ T_WAIT_MS: '99' }).problems, [
      'T_WAIT_MS must be an integer between 100 and 1000 (got "99")',
    ]);
    assert.deepEqual(read({ T_SIZE: '4097' }).problems, [
      'T_SIZE must be an integer between 1024 and 4096 (got "4097")',
    ]);
  });

  it('a flag wins over its variable and is named in the message', () => {
    assert.equal(read({ T_COUNT: '2' }, { count: '3' }).values.count, 3);
    assert.deepEqual(read({ T_COUNT: '2' }, { count: 'x' }).problems, [
      '--count must be an integer between 1 and 10 (got "x")',
    ]);
  });

  it('@BoolEnv: true/false, 1/0, yes/no, on/off in any case', () => {
    for (const yes of ['true', 'YES', '1', ' on ']) assert.equal(read({ T_ON: yes }).values.on, true, yes);
    for (const no of ['false', 'No', '0', 'off']) assert.equal(read({ T_ON: no }).values.on, false, no);
    assert.deepEqual(read({ T_ON: 'maybe' }).problems, ['T_ON must be true or false (got "maybe")']);
  });

  it('@EnumEnv, @UrlEnv, @PatternEnv, @HostListEnv: the value or the message that says the shape', () => {
    assert.equal(read({ T_COLOR: 'blue' }).values.color, 'blue');
    assert.deepEqual(read({ T_COLOR: 'green' }).problems, ['T_COLOR must be one of red, blue (got "green")']);
    assert.equal(read({ T_URL: 'http://h:1/p' }).values.url, 'http://h:1/p');
    assert.deepEqual(read({ T_URL: 'https://h/?q' }).problems, [
      'T_URL must be an http(s) URL without query or fragment (got "https://h/?q")',
    ]);
    assert.deepEqual(read({ T_ADDR: 'h' }).problems, ['T_ADDR must be host:port (got "h")']);
    assert.equal(read({ T_HOSTS: 'a,b:1,[::1]:2' }).values.hosts, 'a,b:1,[::1]:2');
    assert.deepEqual(read({ T_HOSTS: 'a b' }).problems, [
      'T_HOSTS must be comma-separated host or host:port entries (got "a b")',
    ]);
  });

  it('@TextEnv with secret: the value is never shown', () => {
    assert.equal(read({ T_KEY: 'long-enough' }).values.key, 'long-enough');
    assert.deepEqual(read({ T_KEY: 'short' }).problems, ['T_KEY must be at least 8 characters (got (hidden))']);
  });

  it('@ModelEnv: a model some provider serves', () => {
    assert.equal(read({ T_MODEL: 'openai/gpt-4o' }).values.model, 'openai/gpt-4o');
    assert.match(
      read({ T_MODEL: 'foo/bar' }).problems[0],
      /^T_MODEL must be echo, anthropic\/<model>.*\(got "foo\/bar"\)$/,
    );
  });

  it('every problem of an area is reported at once', () => {
    assert.equal(read({ T_COUNT: '0', T_ON: 'x', T_KEY: 'k' }).problems.length, 3);
  });

  it('each decorator records the variable, flag, secrecy and allowed values, in declaration order', () => {
    const specs = settingsOf(Sample);
    assert.deepEqual(
      specs.map((s) => s.key),
      ['count', 'waitMs', 'size', 'on', 'color', 'url', 'addr', 'hosts', 'key', 'model'],
    );
    assert.deepEqual(specs[0], {
      key: 'count',
      env: 'T_COUNT',
      allowed: 'integer 1–10',
      secret: false,
      flag: { name: 'count', arg: 'N' },
    });
    assert.equal(specs.find((s) => s.key === 'waitMs')?.allowed, '100–1000 ms');
    assert.equal(specs.find((s) => s.key === 'size')?.allowed, '1024–4096 bytes');
    assert.equal(specs.find((s) => s.key === 'color')?.allowed, '`red`, `blue`');
    assert.equal(specs.find((s) => s.key === 'key')?.secret, true);
  });
});

describe('configuration: the settings areas', () => {
  it('every setting has its own variable and a place in one area', () => {
    const all = SETTINGS_AREAS.flatMap(({ schema }) => settingsOf(schema));
    assert.equal(new Set(all.map((s) => s.env)).size, all.length, 'a variable feeds one setting');
    assert.equal(new Set(all.map((s) => s.key)).size, all.length, 'a property is declared once');
    const config = new AppConfig();
    for (const spec of all) assert.ok(spec.key in config, spec.key);
  });

  it('secret settings are hidden in errors: every API key and token', () => {
    const secrets = SETTINGS_AREAS.flatMap(({ schema }) => settingsOf(schema))
      .filter((s) => s.secret)
      .map((s) => s.env)
      .sort();
    assert.deepEqual(secrets, [
      'ANTHROPIC_API_KEY',
      'ARBITER_ADMIN_TOKEN',
      'ARBITER_METRICS_TOKEN',
      'ARBITER_SECRETS_KEY',
      'BRAVE_SEARCH_API_KEY',
      'DATABASE_URL',
      'OPENAI_API_KEY',
      'OPENROUTER_API_KEY',
      'TAVILY_API_KEY',
    ]);
  });

  it('new AppConfig() holds every default, as loadConfig({}) does', () => {
    const { home: _home, ...loaded } = { ...loadConfig({}) };
    const { home: _default, ...defaults } = { ...new AppConfig() };
    assert.deepEqual(defaults, loaded);
  });
});
