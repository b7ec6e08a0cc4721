// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ListTasksRequest, TaskState, type Task } from '@a2a-js/sdk';
import { FakeProvider, type ScriptCall, type ScriptReply } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { readSse, textMessage, v1Client } from '../helpers/a2a.js';
import { newKeyPair } from '../helpers/card-signatures.js';
import { startSignedAgent, type SignedAgent } from '../helpers/signed-agent.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('remote card pinning: card_signature in a2a_agents.json (A2A §8.4.3)', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let a: TestTenant;
  let peer: SignedAgent;

  let n = 0;
  /** Runs `command` as the first reply of a fresh agent; returns what the model was fed back. */
  const run = async (command: string): Promise<string> => {
    const model = `pin-${++n}`;
    fake.scripts.set(model, (c: ScriptCall): ScriptReply => (c.call === 1 ? command : 'done'));
    await newAgent(a, { id: model, model: `openai/${model}` });
    const res = await fetch(`${server.url}/v1/agents/${model}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    });
    await readSse(res);
    const requests = fake.requests.filter((r) => r.body.model === model);
    assert.equal(requests.length, 2, 'the model was called again with the result');
    const messages = (requests[1].body as { messages: { content: string }[] }).messages;
    return messages[messages.length - 1].content;
  };

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    peer = await startSignedAgent();
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        ARBITER_DEFAULT_MODEL: 'openai/master',
        ARBITER_A2A_ALLOW_PRIVATE: 'true',
        ARBITER_A2A_CARD_TTL_MS: '0',
      },
    });
    a = await newTenant(server, 'pinner');
    const jwksUrl = `${peer.url}/jwks.json`;
    const other = newKeyPair('ES256').publicKey.export({ format: 'jwk' });
    writeFileSync(
      join(server.home, 'a2a_agents.json'),
      JSON.stringify({
        agents: {
          good: { url: `${peer.url}/good`, card_signature: { jwks_url: jwksUrl, required: true } },
          good_jwk: { url: `${peer.url}/good`, card_signature: { jwk: peer.jwk } },
          unpinned: { url: `${peer.url}/unsigned` },
          unsigned: { url: `${peer.url}/unsigned`, card_signature: { jwks_url: jwksUrl } },
          unsigned_ok: { url: `${peer.url}/unsigned`, card_signature: { jwks_url: jwksUrl, required: false } },
          other_key: { url: `${peer.url}/good`, card_signature: { jwk: other } },
          wrong_key: { url: `${peer.url}/wrongkey`, card_signature: { jwks_url: jwksUrl } },
          tampered: { url: `${peer.url}/tampered`, card_signature: { jwks_url: jwksUrl } },
          symmetric: { url: `${peer.url}/good`, card_signature: { jwks_url: `${peer.url}/sym-jwks.json` } },
        },
      }),
    );
  });
  after(async () => {
    await server?.close();
    await peer?.close();
    await fake?.stop();
  });

  it('a card signed by the pinned key (JWKS URL or inline JWK) is verified, and the call goes through', async () => {
    const card = await run('/a2a card good');
    assert.match(card, new RegExp(`signature: verified \\(kid ${peer.jwk.kid}\\)`));
    assert.match(await run('/a2a call good hello'), /signed heard: hello/);
    assert.match(await run('/a2a card good_jwk'), new RegExp(`signature: verified \\(kid ${peer.jwk.kid}\\)`));
    assert.match(await run('/a2a call good_jwk hi'), /signed heard: hi/);
  });

  it('an unpinned remote is not checked; an unsigned card is taken only when the pin does not require a signature', async () => {
    assert.match(await run('/a2a card unpinned'), /signature: not checked \(no card_signature pinned\)/);
    assert.match(await run('/a2a card unsigned_ok'), /signature: not signed \(card_signature not required\)/);
    assert.match(await run('/a2a call unsigned_ok hey'), /signed heard: hey/);
  });

  it('refuses, fail closed, with the ERR line: unsigned, another key, a wrong key, tampered content, a symmetric JWKS', async () => {
    const cases: [string, RegExp][] = [
      ['unsigned', /ERR: card signature invalid: the card is not signed/],
      ['other_key', /ERR: card signature invalid: no pinned key has kid /],
      ['wrong_key', /ERR: card signature invalid: the signature by kid "[^"]+" does not match the card's content/],
      ['tampered', /ERR: card signature invalid: the signature by kid "[^"]+" does not match the card's content/],
      [
        'symmetric',
        /ERR: card signature invalid: the pinned JWKS has no usable public key \(symmetric keys are refused\)/,
      ],
    ];
    for (const [name, expected] of cases) {
      const called = await run(`/a2a call ${name} secret plans`);
      assert.match(called, expected, name);
      assert.doesNotMatch(called, /signed heard/, `${name}: nothing was sent`);
      assert.match(await run(`/a2a card ${name}`), expected, name);
    }
    assert.match(await run('/a2a list'), /tampered — \(card signature invalid\)/);
  });

  it("a remote-backed agent's upstream card is checked against its pin too: verified, or nothing is sent", async () => {
    await newAgent(a, { id: 'front-good', backend: { remote: 'good', registry: 'shared' } });
    await newAgent(a, { id: 'front-tampered', backend: { remote: 'tampered', registry: 'shared' } });
    const send = async (agent: string, text: string): Promise<Task> =>
      (await (await v1Client(server.url, a.token, agent)).sendMessage(textMessage(text))) as Task;
    const good = await send('front-good', 'hello');
    assert.equal(TaskState[good.status!.state], 'TASK_STATE_COMPLETED');
    // The caller waiting for its answer gets the refusal as its error; the task ends failed saying the same.
    await assert.rejects(
      send('front-tampered', 'secret plans'),
      /upstream: card signature invalid: the signature by kid "[^"]+" does not match the card's content/,
    );
    const listed = await (
      await v1Client(server.url, a.token, 'front-tampered')
    ).listTasks(ListTasksRequest.fromJSON({ historyLength: 10 }));
    assert.equal(listed.tasks.length, 1);
    const [failed] = listed.tasks;
    assert.equal(TaskState[failed.status!.state], 'TASK_STATE_FAILED');
    const said = (failed.status?.message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : ''));
    assert.match(said.join(''), /^upstream_error: card signature invalid: the signature by kid "[^"]+" does not match/);
    assert.doesNotMatch(JSON.stringify(failed), /signed heard/, 'nothing was sent');
  });
});
