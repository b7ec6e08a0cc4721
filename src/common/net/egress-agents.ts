import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { EgressPolicy } from './egress.js';

/**
 * How long a connection may wait idle for its next request: below the 5 s a Node server (the SDK's, Express's)
 * keeps one open, so that a request is not sent on a connection the server is closing.
 */
const IDLE_MS = 4_000;
/** Most idle connections kept per origin. */
const MAX_IDLE = 32;

const pools = new Map<string, HttpAgent>();
/** Each policy's pool key (policies are made once, by the settings and the registry). */
const keys = new WeakMap<EgressPolicy, string>();

/**
 * The keep-alive connection pool (idle connections do not keep the process alive) for `protocol` under `policy`. A connection is checked once, when it is made:
 * the request's guarded `lookup` resolves its host and refuses a blocked address, and the socket is connected to
 * the address checked. A pool only ever serves requests under an equal policy (one pool per protocol and policy),
 * to the same host and port (Node's pools key by them) and, for https, with the same TLS client credential (the
 * https agent keys by it too): a connection made under one policy or for one host never carries another's
 * requests. Without pooling, every call paid a TCP connection, here and at the remote.
 */
export function egressAgent(protocol: 'http:' | 'https:', policy: EgressPolicy): HttpAgent {
  let policyKey = keys.get(policy);
  if (policyKey === undefined) {
    policyKey = `${policy.allowPrivate ? 1 : 0}|${[...policy.allowHosts].sort().join(',')}`;
    keys.set(policy, policyKey);
  }
  const key = `${protocol}|${policyKey}`;
  let agent = pools.get(key);
  if (!agent) {
    const options = { keepAlive: true, timeout: IDLE_MS, maxFreeSockets: MAX_IDLE, scheduling: 'lifo' as const };
    agent = protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
    pools.set(key, agent);
  }
  return agent;
}
