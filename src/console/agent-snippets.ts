/**
 * The copyable "call this agent" snippets of the console's agent page. They live here, beside the module that
 * serves the console, because two builds read them: the console (bundled by Vite) shows them, and a test runs each
 * one verbatim — the curl ones with bash, the TypeScript one compiled against the pinned `@a2a-js/sdk` — against a
 * real server. Plain strings only: no Node or DOM API, so both builds can import this file.
 */
export interface AgentSnippet {
  label: string;
  /** `curl` snippets run in bash; the TypeScript one is an ES module (top-level await) for Node ≥ 20. */
  lang: 'bash' | 'typescript';
  text: string;
}

/**
 * The snippets for agent `id` (already URL-encoded) on the server at `base` (its origin). They read the tenant
 * token from `$TOKEN` (`process.env.TOKEN`), never embed it. Each run sends a new messageId: the same id with
 * another message is refused, and with the same message gets the first task back.
 */
export function agentSnippets(base: string, id: string): AgentSnippet[] {
  const url = `${base}/v1/a2a/agents/${id}`;
  return [
    {
      label: 'curl: JSON-RPC SendMessage (v1.0)',
      lang: 'bash',
      text: `curl -s ${url} -H "Authorization: Bearer $TOKEN" -H 'A2A-Version: 1.0' \\
  -H 'Content-Type: application/json' \\
  -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"'$(node -p 'crypto.randomUUID()')'","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'`,
    },
    {
      label: 'curl: REST message:stream (SSE)',
      lang: 'bash',
      text: `curl -N ${url}/message:stream -H "Authorization: Bearer $TOKEN" -H 'A2A-Version: 1.0' \\
  -H 'Content-Type: application/a2a+json' \\
  -d '{"message":{"messageId":"'$(node -p 'crypto.randomUUID()')'","role":"ROLE_USER","parts":[{"text":"hello"}]}}'`,
    },
    {
      label: 'TypeScript: @a2a-js/sdk',
      lang: 'typescript',
      // SDK 1.x types are the A2A 1.0 protobuf messages (role ROLE_USER, parts with `text`): built from their
      // JSON form, as on the wire. Save as an .mts file; needs @a2a-js/sdk ≥ 1.0 and Node ≥ 20.
      text: `import { Message, SendMessageRequest, Task } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

// Every request carries the tenant token, read from the environment.
const fetchImpl: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('Authorization', \`Bearer \${process.env.TOKEN}\`);
  return fetch(input, { ...init, headers });
};
const client = await new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
}).createFromUrl('${url}/');
const reply = await client.sendMessage(
  SendMessageRequest.fromJSON({
    message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] },
  }),
);
// A task (state, artifacts with the answer) or a direct message.
console.log(JSON.stringify('status' in reply ? Task.toJSON(reply) : Message.toJSON(reply), null, 2));`,
    },
  ];
}
