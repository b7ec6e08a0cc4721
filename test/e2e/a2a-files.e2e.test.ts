import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { GetTaskRequest, SendMessageRequest, type Part, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { TaskFiles } from '../../src/tasks/task-files.service.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { a2a, readSse, restClient, rpc, V1, v03Client, v1Client } from '../helpers/a2a.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const MAX_FILE = 64 * 1024;
const MAX_MESSAGE_FILES = 100 * 1024;
const MAX_BODY = 16 * 1024;
/** A small PNG-like binary the scripted model writes with `/write --base64`. */
const PICTURE = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0xff]),
  randomBytes(300),
]);

/** A loopback file host that counts every request: URL parts must not reach it unless a tool asks. */
async function startFileHost(): Promise<{ server: Server; url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello from the file host');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

function fileMessage(parts: Record<string, unknown>[], extra: Record<string, unknown> = {}): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts, ...extra },
  });
}

const rawOf = (p: Part | undefined): Buffer | undefined =>
  p?.content?.$case === 'raw' ? Buffer.from(p.content.value) : undefined;

describe('binary file parts (spec §4.1.6 Part raw/url; v0.3 FilePart)', () => {
  let fake: FakeProvider;
  let host: Awaited<ReturnType<typeof startFileHost>>;
  let server: TestServer;
  let t: TestTenant;
  let other: TestTenant;

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    host = await startFileHost();
    fake.scripts.set('filer', (c) => {
      if (c.last.startsWith('[/write')) return 'saved';
      if (c.last.startsWith('[/fetch')) return `fetched: ${c.last.includes('hello from the file host') ? 'yes' : 'no'}`;
      const url = /please fetch (\S+)/.exec(c.last)?.[1];
      if (url) return `/fetch ${url}`;
      if (c.last.includes('make a picture')) {
        return `Here it is.\n/write --base64 out/pic.png\n${PICTURE.toString('base64')}\n/endwrite`;
      }
      return 'got it';
    });
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: 'sk-test-files-0001',
        ARBITER_DEFAULT_MODEL: 'openai/filer',
        ARBITER_MAX_FILE_BYTES: String(MAX_FILE),
        ARBITER_MAX_MESSAGE_FILE_BYTES: String(MAX_MESSAGE_FILES),
        ARBITER_MAX_BODY_BYTES: String(MAX_BODY),
        // Test-only: the file host may be fetched by /fetch (a tool), which is the only way a URL part is read.
        ARBITER_FETCH_ALLOWLIST: new URL(host.url).host,
      },
    });
    t = await newTenant(server, 'files');
    other = await newTenant(server, 'files-other');
  });
  after(async () => {
    await server.close();
    await fake.stop();
    host.server.closeAllConnections();
    await new Promise((r) => host.server.close(r));
  });

  /** Every request the model got, as one string. */
  const modelSaw = (): string => JSON.stringify(fake.requests.map((r) => r.body.messages));

  const roundTrip = async (client: Client, label: string): Promise<void> => {
    const bytes = Buffer.concat([Buffer.from([0, 0xff, 0xfe, 0]), randomBytes(40_000)]);
    const res = (await client.sendMessage(
      fileMessage([
        { text: `keep this (${label})` },
        { raw: bytes.toString('base64'), mediaType: 'application/octet-stream', filename: `${label}.bin` },
      ]),
    )) as Task;
    assert.equal(res.status?.state, 3 /* TASK_STATE_COMPLETED */, label);
    const sent = res.history[0]?.parts[1];
    assert.ok(rawOf(sent)?.equals(bytes), `${label}: the send's result carries the bytes`);
    assert.equal(sent?.mediaType, 'application/octet-stream');
    assert.equal(sent?.filename, `${label}.bin`);
    const read = await client.getTask(GetTaskRequest.fromJSON({ id: res.id }));
    const part = read.history[0]?.parts[1];
    assert.ok(rawOf(part)?.equals(bytes), `${label}: GetTask returns the exact bytes`);
    assert.deepEqual(part?.metadata ?? {}, {}, `${label}: no internal reference leaks into the part`);
    // The model saw one line for the file, never its bytes.
    assert.ok(modelSaw().includes(`[file: ${label}.bin, application/octet-stream, ${bytes.length} bytes]`), label);
    assert.ok(!modelSaw().includes(bytes.subarray(100, 400).toString('base64').slice(4, 60)), `${label}: no bytes`);
    assert.equal(await server.running.app.get(TaskFiles).count(t.id, res.id), 1, `${label}: stored with the task`);
  };

  it('v1.0 JSON-RPC (official SDK client): raw bytes in, the same bytes back; the model sees name, type and size', async () => {
    await roundTrip(await v1Client(server.url, t.token), 'jsonrpc');
  });

  it('HTTP+JSON/REST (official SDK client): the same', async () => {
    await roundTrip(await restClient(server.url, t.token), 'rest');
  });

  it('v0.3 JSON-RPC (SDK compat client, FilePart file.bytes): the same; the v0.3 wire shape is FilePart', async () => {
    await roundTrip(await v03Client(server.url, t.token), 'v03');
    const bytes = randomBytes(1000);
    const res = await rpc(server.url, t.token, 'index', {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: randomUUID(),
          role: 'user',
          parts: [{ kind: 'file', file: { bytes: bytes.toString('base64'), mimeType: 'image/jpeg', name: 'a.jpg' } }],
        },
      },
    });
    const body = (await res.json()) as { result: any };
    assert.deepEqual(body.result.history[0].parts[0], {
      kind: 'file',
      file: { bytes: bytes.toString('base64'), mimeType: 'image/jpeg', name: 'a.jpg' },
    });
  });

  it('a file by URL is kept as given and never fetched by the server; only a tool (/fetch) reads it', async () => {
    const client = await v1Client(server.url, t.token);
    const url = `${host.url}/report.txt`;
    const res = (await client.sendMessage(
      fileMessage([{ url, mediaType: 'text/plain', filename: 'report.txt' }]),
    )) as Task;
    const part = (await client.getTask(GetTaskRequest.fromJSON({ id: res.id }))).history[0]?.parts[0];
    assert.deepEqual(part?.content, { $case: 'url', value: url });
    assert.equal(part?.filename, 'report.txt');
    assert.ok(modelSaw().includes(`[file: report.txt, text/plain, at ${url} (not fetched)]`));
    assert.equal(host.hits(), 0, 'nothing fetched the URL');
    // The model asks for it with /fetch: the egress guard lets this allow-listed host through.
    const fetched = (await client.sendMessage(fileMessage([{ text: `please fetch ${url}` }]))) as Task;
    const reply = fetched.artifacts.find((a) => a.name === 'response')?.parts[0]?.content;
    assert.deepEqual(reply, { $case: 'text', value: 'fetched: yes' });
    assert.equal(host.hits(), 1);
  });

  it('a tool produces a binary artifact (/write --base64): streamed and read back with the exact bytes', async () => {
    const client = await v1Client(server.url, t.token);
    let streamed: Buffer | undefined;
    let taskId = '';
    for await (const e of client.sendMessageStream(fileMessage([{ text: 'make a picture' }]))) {
      if (e.payload?.$case === 'task') taskId = e.payload.value.id;
      if (e.payload?.$case === 'artifactUpdate' && e.payload.value.artifact?.name === 'out/pic.png') {
        const p = e.payload.value.artifact.parts[0];
        streamed = rawOf(p);
        assert.equal(p?.mediaType, 'image/png');
        assert.equal(p?.filename, 'out/pic.png');
      }
    }
    assert.ok(streamed?.equals(PICTURE), 'the stream carries the bytes');
    const read = await client.getTask(GetTaskRequest.fromJSON({ id: taskId }));
    const file = read.artifacts.find((a) => a.name === 'out/pic.png');
    assert.ok(rawOf(file?.parts[0])?.equals(PICTURE), 'GetTask carries the bytes');
    // The model's tool result names the file, type and size.
    assert.ok(modelSaw().includes(`wrote out/pic.png (image/png, ${PICTURE.length} bytes)`));
    // v0.3 readers get a FilePart with bytes; the native API gets the bytes too.
    const v03 = await rpc(server.url, t.token, 'index', {
      jsonrpc: '2.0',
      id: 2,
      method: 'tasks/get',
      params: { id: taskId },
    });
    const v03Task = ((await v03.json()) as { result: any }).result;
    const v03File = v03Task.artifacts.find((a: any) => a.name === 'out/pic.png');
    assert.deepEqual(v03File.parts[0], {
      kind: 'file',
      file: { bytes: PICTURE.toString('base64'), mimeType: 'image/png', name: 'out/pic.png' },
    });
    const native = await t.client.get(`/v1/requests/${taskId}`);
    const nativeFile = native.body.artifacts.find((a: any) => a.name === 'out/pic.png');
    assert.equal(nativeFile.parts[0].raw, PICTURE.toString('base64'));
    const events = await fetch(`${server.url}/v1/requests/${taskId}/events`, {
      headers: { authorization: `Bearer ${t.token}` },
    });
    const frame = (await readSse(events)).events.find((e) => e.event === 'file');
    const data = (frame?.data ?? {}) as Record<string, unknown>;
    assert.equal(data.encoding, 'base64');
    assert.equal(data.content, PICTURE.toString('base64'));
    assert.equal(data.size, PICTURE.length);
  });

  it('over the limits: a part over ARBITER_MAX_FILE_BYTES or a message over ARBITER_MAX_MESSAGE_FILE_BYTES is invalid params (JSON-RPC -32602, REST 400); a body beyond the allowance is a 413', async () => {
    const part = (n: number) => ({ raw: randomBytes(n).toString('base64'), mediaType: 'application/pdf' });
    const send = (parts: unknown[]) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts } },
    });
    const tooBig = (await (await rpc(server.url, t.token, 'index', send([part(MAX_FILE + 1)]), V1)).json()) as any;
    assert.equal(tooBig.error.code, -32602);
    assert.match(tooBig.error.message, /params\.message\.parts\[0\]\.raw.*at most 65536 bytes/);
    const total = (await (
      await rpc(server.url, t.token, 'index', send([part(MAX_FILE), part(MAX_MESSAGE_FILES - MAX_FILE + 1)]), V1)
    ).json()) as any;
    assert.equal(total.error.code, -32602);
    assert.match(total.error.message, /parts\[1\]\.raw.*at most 102400 bytes of files/);
    const rest = await fetch(`${server.url}/v1/a2a/agents/index/message:send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'a2a-version': '1.0', 'content-type': 'application/json' },
      body: JSON.stringify({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [part(MAX_FILE + 1)] } }),
    });
    assert.equal(rest.status, 400);
    const restBody = (await rest.json()) as any;
    assert.equal(restBody.error.status, 'INVALID_ARGUMENT');
    assert.equal(restBody.error.details.find((d: any) => d.reason)?.reason, 'INVALID_PARAMS');
    // Text is still bound by ARBITER_MAX_BODY_BYTES on a route that takes files…
    const text = await rpc(server.url, t.token, 'index', send([{ text: 'x'.repeat(MAX_BODY + 10) }]), V1);
    assert.equal(text.status, 413);
    // …and the whole body by ARBITER_MAX_BODY_BYTES plus the base64 of ARBITER_MAX_MESSAGE_FILE_BYTES.
    const huge = await rpc(server.url, t.token, 'index', send([part(MAX_MESSAGE_FILES * 2)]), V1);
    assert.equal(huge.status, 413);
    // Keys named like file bytes elsewhere (metadata) are not file bytes: the plain limit holds for them.
    const disguised = await rpc(
      server.url,
      t.token,
      'index',
      {
        ...send([{ text: 'hi' }]),
        params: {
          message: {
            messageId: randomUUID(),
            role: 'ROLE_USER',
            parts: [{ text: 'hi' }],
            metadata: { raw: 'A'.repeat(MAX_BODY), bytes: 'A'.repeat(MAX_BODY) },
          },
        },
      },
      V1,
    );
    assert.equal(disguised.status, 413);
    const restDisguised = await fetch(`${server.url}/v1/a2a/agents/index/message:send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'a2a-version': '1.0', 'content-type': 'application/json' },
      body: JSON.stringify({
        message: {
          messageId: randomUUID(),
          role: 'ROLE_USER',
          parts: [{ text: 'hi' }],
          metadata: { raw: 'A'.repeat(MAX_BODY) },
        },
      }),
    });
    assert.equal(restDisguised.status, 413);
    assert.equal(((await restDisguised.json()) as any).error.code, 413);
    // A file within the limits in a body larger than ARBITER_MAX_BODY_BYTES is accepted.
    const fits = (await (await rpc(server.url, t.token, 'index', send([part(MAX_FILE)]), V1)).json()) as any;
    assert.equal(fits.result.task.status.state, 'TASK_STATE_COMPLETED');
    // Bad base64 and a URL that is not http(s) are invalid params too.
    const bad = (await (
      await rpc(server.url, t.token, 'index', send([{ raw: 'not base64!', mediaType: 'image/png' }]), V1)
    ).json()) as any;
    assert.equal(bad.error.code, -32602);
  });

  it('ListTasks: a page carries at most twice ARBITER_MAX_MESSAGE_FILE_BYTES of files; a shorter page and a token for the rest', async () => {
    const u = await newTenant(server, 'files-pages');
    const agent = a2a(server.url, u.token);
    const sent: Buffer[] = [];
    for (let i = 0; i < 4; i++) {
      const bytes = randomBytes(MAX_FILE); // 4 × 64 KiB; the page allowance is 2 × 100 KiB
      sent.push(bytes);
      const r = await agent.send(`file ${i}`, {
        parts: [{ raw: bytes.toString('base64'), mediaType: 'application/octet-stream' }],
      });
      assert.equal(r.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(r));
    }
    const first = await agent.list({ pageSize: 10 });
    assert.equal(first.result.tasks.length, 3, 'three files fit the allowance, four do not');
    assert.equal(first.result.totalSize, 4);
    assert.ok(first.result.nextPageToken, 'a token for the rest');
    const second = await agent.list({ pageSize: 10, pageToken: first.result.nextPageToken });
    assert.equal(second.result.tasks.length, 1);
    assert.equal(second.result.nextPageToken ?? '', '');
    // Every task once, each with its own bytes back.
    const all = [...first.result.tasks, ...second.result.tasks];
    const got = all.map((t: any) => Buffer.from(t.history[0].parts[1].raw, 'base64'));
    assert.equal(new Set(all.map((t: any) => t.id)).size, 4);
    for (const bytes of sent)
      assert.ok(
        got.some((g) => g.equals(bytes)),
        'the bytes of each file',
      );
    // Without history (and artifacts) no file is carried: the whole page again.
    const light = await agent.list({ pageSize: 10, historyLength: 0 });
    assert.equal(light.result.tasks.length, 4);
  });

  it("files are the tenant's: another tenant's read is 'not found'; deleting the conversation deletes its files", async () => {
    const files = server.running.app.get(TaskFiles);
    const conv = await t.client.post('/v1/conversations', { title: 'with a file' });
    assert.equal(conv.status, 201, conv.text);
    const contextId = conv.body.id as string;
    const client = await v1Client(server.url, t.token);
    const bytes = randomBytes(5000);
    const res = (await client.sendMessage(
      fileMessage([{ raw: bytes.toString('base64'), mediaType: 'application/zip', filename: 'a.zip' }], {
        contextId,
      }),
    )) as Task;
    assert.equal(await files.count(t.id, res.id), 1);
    assert.equal(await files.count(other.id, res.id), 0, "another tenant's view of the task has no files");
    const otherClient = await v1Client(server.url, other.token);
    await assert.rejects(otherClient.getTask(GetTaskRequest.fromJSON({ id: res.id })), /-32001|not found/i);
    assert.equal((await t.client.delete(`/v1/conversations/${contextId}`)).status, 204);
    assert.equal(await files.count(t.id, res.id), 0, 'the files went with the task');
    await assert.rejects(client.getTask(GetTaskRequest.fromJSON({ id: res.id })), /-32001|not found/i);
  });
});
