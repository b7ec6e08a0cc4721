// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseRegistry, RegistryError } from '../../src/a2a-outbound/remote-registry.service.js';

describe('a2a_agents.json', () => {
  it('reads the seed schema: url, bearer token inline or from the environment', () => {
    const { agents, warnings } = parseRegistry(
      JSON.stringify({
        agents: {
          weatherbot: {
            url: 'https://weather.example.com/v1/a2a/agents/weather/',
            auth: { type: 'bearer', token_env: 'WB' },
          },
          'rfc-reviewer': { url: 'https://rfc.example.com/a2a/reviewer', auth: { token: 'atr_x' } },
          open: { url: 'http://in-cluster:8080/a2a' },
          unset: { url: 'https://x.example.com/a', auth: { token_env: 'NOPE_NOT_SET' } },
          volt: {
            url: 'https://volt.example.com/a2a/support',
            card_url: 'https://volt.example.com/.well-known/support/agent-card.json',
          },
        },
      }),
      { WB: 'secret-wb' },
    );
    assert.deepEqual(agents.get('weatherbot'), {
      name: 'weatherbot',
      url: 'https://weather.example.com/v1/a2a/agents/weather',
      auth: { type: 'bearer', token: 'secret-wb' },
    });
    assert.deepEqual(agents.get('rfc-reviewer')?.auth, { type: 'bearer', token: 'atr_x' });
    assert.deepEqual(agents.get('open')?.auth, { type: 'none' });
    assert.equal(agents.get('unset')?.missingTokenEnv, 'NOPE_NOT_SET');
    assert.equal(agents.get('volt')?.cardUrl, 'https://volt.example.com/.well-known/support/agent-card.json');
    assert.equal(agents.get('open')?.cardUrl, undefined);
    assert.deepEqual(warnings, [
      'agents.unset: environment variable NOPE_NOT_SET is not set; calls will fail with HTTP 401',
    ]);
  });

  it('names the bad field of a malformed file', () => {
    const bad = (doc: unknown, re: RegExp) =>
      assert.throws(
        () => parseRegistry(typeof doc === 'string' ? doc : JSON.stringify(doc), {}),
        (e: unknown) => e instanceof RegistryError && re.test(e.message),
        String(re),
      );
    bad('{ nope', /not valid JSON/);
    // The parser's own message quotes the text around the fault; a secret there never reaches the error.
    const secret = 'atr_SECRET_in_a_broken_file_0001';
    assert.throws(
      () => parseRegistry(`{"agents": {"x": {"url": "https://x.example", "token": "${secret}" oops}}}`, {}),
      (e: unknown) => e instanceof RegistryError && /^not valid JSON/.test(e.message) && !e.message.includes('SECRET'),
    );
    bad([], /top level must be an object/);
    bad({}, /"agents" is required/);
    bad({ agents: {}, extra: 1 }, /unknown field "extra"/);
    bad({ agents: { x: { url: 'ftp://h/' } } }, /agents\.x\.url must be an absolute http\(s\) URL/);
    bad({ agents: { x: {} } }, /agents\.x\.url is required/);
    bad({ agents: { x: { url: 'https://u:p@h/' } } }, /must not carry credentials/);
    bad(
      { agents: { x: { url: 'https://h/', auth: { type: 'oauth2' } } } },
      /agents\.x\.auth\.type must be one of bearer, header/,
    );
    bad({ agents: { x: { url: 'https://h/', auth: { token: 'a', token_env: 'B' } } } }, /token or token_env, not both/);
    bad(
      { agents: { x: { url: 'https://h/', auth: { token_env: 'no spaces' } } } },
      /token_env must be an environment variable name/,
    );
    bad({ agents: { x: { url: 'https://h/', headers: {} } } }, /agents\.x: unknown field "headers"/);
    bad({ agents: { 'bad name!': { url: 'https://h/' } } }, /a name must match/);
    bad({ agents: { x: { url: 'https://h/', card_url: 5 } } }, /agents\.x\.card_url must be a string/);
    for (const cardUrl of ['ftp://h/card.json', '/.well-known/x/agent-card.json', 'file:///etc/passwd', '']) {
      bad(
        { agents: { x: { url: 'https://h/', card_url: cardUrl } } },
        /agents\.x\.card_url must be an absolute http\(s\) URL/,
      );
    }
    bad(
      { agents: { x: { url: 'https://h/', card_url: 'https://u:p@h/card.json' } } },
      /card_url must not carry credentials/,
    );
  });
});
