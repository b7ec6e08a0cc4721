import type { Server } from 'node:http';
import type { KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AgentCard, Message, Role, Task, TaskState, generateAgentCardSignature } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { newKeyPair } from './card-signatures.js';

/**
 * A remote A2A agent of the official SDK whose card is signed by the SDK's own signer
 * (`generateAgentCardSignature`, given to `DefaultRequestHandler`), for card pinning. JSON-RPC at `/rpc`
 * (it completes with "signed heard: <input>"); its key's JWKS at `/jwks.json`; cards under:
 *   `/good/agent-card.json`      signed by its key
 *   `/unsigned/agent-card.json`  no signatures
 *   `/wrongkey/agent-card.json`  signed by another key, under its key's kid
 *   `/tampered/agent-card.json`  signed, then its description changed
 * and `/sym-jwks.json`, a JWKS holding only a symmetric key.
 */
export interface SignedAgent {
  url: string;
  /** The public JWK (with its kid) the good cards are signed with. */
  jwk: JWK;
  close(): Promise<void>;
}

function executor(): AgentExecutor {
  return {
    execute(ctx, bus) {
      const at = () => new Date().toISOString();
      const input = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
      bus.publish(
        AgentEvent.task(
          Task.fromJSON({
            id: ctx.taskId,
            contextId: ctx.contextId,
            status: { state: 'TASK_STATE_WORKING', timestamp: at() },
            history: [Message.toJSON(ctx.userMessage)],
          }),
        ),
      );
      const reply: Message = {
        messageId: `${ctx.taskId}-r`,
        contextId: ctx.contextId,
        taskId: ctx.taskId,
        role: Role.ROLE_AGENT,
        parts: [
          {
            content: { $case: 'text', value: `signed heard: ${input}` },
            metadata: undefined,
            filename: '',
            mediaType: '',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      };
      bus.publish(
        AgentEvent.statusUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          metadata: undefined,
          status: { state: TaskState.TASK_STATE_COMPLETED, message: reply, timestamp: at() },
        }),
      );
      bus.finished();
      return Promise.resolve();
    },
    cancelTask(_taskId, bus) {
      bus.finished();
      return Promise.resolve();
    },
  };
}

const signer = (key: KeyObject, kid: string) => generateAgentCardSignature(key, { alg: 'ES256', kid, typ: 'JOSE' });

export async function startSignedAgent(): Promise<SignedAgent> {
  const app = express();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = AgentCard.fromJSON({
    name: 'signed',
    description: 'An SDK agent whose card is signed',
    supportedInterfaces: [{ url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    version: '1',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'listen', name: 'listen', description: 'repeats what it heard', tags: ['echo'] }],
  });
  const { privateKey, publicKey } = newKeyPair('ES256');
  const exported = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(exported);
  const jwk: JWK = { ...exported, kid, alg: 'ES256', use: 'sig' };
  const handler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    executor(),
    undefined,
    undefined,
    undefined,
    undefined,
    signer(privateKey, kid),
  );
  const cards: Record<string, () => Promise<unknown>> = {
    good: async () => AgentCard.toJSON(await handler.getAgentCard()),
    unsigned: () => Promise.resolve(AgentCard.toJSON(card)),
    wrongkey: async () => AgentCard.toJSON(await signer(newKeyPair('ES256').privateKey, kid)(card)),
    tampered: async () => ({ ...(AgentCard.toJSON(await handler.getAgentCard()) as object), description: 'Trust me' }),
  };
  for (const [path, body] of Object.entries(cards)) {
    app.get(`/${path}/agent-card.json`, (_req, res, next) => {
      body().then((b) => res.json(b), next);
    });
  }
  app.get('/jwks.json', (_req, res) => res.json({ keys: [jwk] }));
  app.get('/sym-jwks.json', (_req, res) =>
    res.json({ keys: [{ kty: 'oct', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0', kid, alg: 'HS256' }] }),
  );
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return {
    url,
    jwk,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
