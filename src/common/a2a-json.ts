/**
 * A2A v1.0 ProtoJSON objects (Message, Part, Artifact) as Arbiter stores and
 * reads them: the event log's payloads, and what remote agents send back.
 */
export type MessageJson = {
  messageId: string;
  role: 'ROLE_USER' | 'ROLE_AGENT';
  parts: PartJson[];
  contextId?: string;
  taskId?: string;
  metadata?: Record<string, unknown>;
  extensions?: string[];
  referenceTaskIds?: string[];
};

export type PartJson = {
  text?: string;
  raw?: string;
  url?: string;
  data?: unknown;
  mediaType?: string;
  filename?: string;
  metadata?: Record<string, unknown>;
};

export type ArtifactJson = {
  artifactId: string;
  name?: string;
  description?: string;
  parts: PartJson[];
  metadata?: Record<string, unknown>;
  extensions?: string[];
};

/**
 * The metadata keys Arbiter puts on the artifacts that record its own work
 * (a tool call, a file, a sub-agent's reply), so that they can be told from
 * an answer — by this runtime and by another Arbiter that calls it.
 */
export const ARBITER_ARTIFACT_META = {
  toolCall: 'x-arbiter.tool_call',
  file: 'x-arbiter.file',
  subAgent: 'x-arbiter.sub_agent',
  depth: 'x-arbiter.depth',
  agent: 'x-arbiter.agent',
} as const;

/** True for an artifact that records Arbiter's own work (a tool call or a sub-agent's reply), not an answer. */
export function isWorkRecord(a: { metadata?: Record<string, unknown> }): boolean {
  const m = a.metadata ?? {};
  return m[ARBITER_ARTIFACT_META.toolCall] === true || m[ARBITER_ARTIFACT_META.subAgent] === true;
}
