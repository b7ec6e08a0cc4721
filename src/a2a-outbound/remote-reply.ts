import { Task } from '@a2a-js/sdk';
import { isWorkRecord, type ArtifactJson, type MessageJson, type PartJson } from '../common/a2a-json.js';

/** A remote task as ProtoJSON (repeated fields that are empty are left out on the wire). */
interface TaskJson {
  id?: string;
  status?: { state?: string; message?: Partial<MessageJson> };
  artifacts?: Partial<ArtifactJson>[];
  history?: Partial<MessageJson>[];
}

/** Text of ProtoJSON parts: text as is, data as JSON, files as a short note. */
export function partsText(parts: PartJson[] | undefined): string {
  return (parts ?? [])
    .map((p) => {
      if (typeof p.text === 'string') return p.text;
      if (p.data !== undefined) return JSON.stringify(p.data);
      const name = p.filename || 'file';
      const type = p.mediaType || 'unknown type';
      if (typeof p.raw === 'string') return `[file ${name} (${type}, ${Buffer.from(p.raw, 'base64').length} bytes)]`;
      if (typeof p.url === 'string') return `[file ${name} (${type}) at ${p.url}]`;
      return '';
    })
    .filter((s) => s.length > 0)
    .join('\n');
}

/**
 * What the remote agent said in the task's history after our message
 * (`sentId`; when the remote renamed it, after the last user message):
 * the text parts of its messages. Their data parts are progress records
 * (gemini-cli-a2a-server's tool-call updates and thoughts), not the answer.
 */
function historyText(history: Partial<MessageJson>[], sentId: string): string {
  let from = history.findIndex((m) => m.messageId === sentId);
  if (from < 0) from = history.findLastIndex((m) => m.role === 'ROLE_USER');
  return history
    .slice(from + 1)
    .filter((m) => m.role === 'ROLE_AGENT')
    .map((m) => partsText((m.parts ?? []).filter((p) => typeof p.text === 'string')))
    .filter((s) => s.trim().length > 0)
    .join('\n\n');
}

/**
 * The reply of a remote task: its artifacts' text, then the final status
 * message unless it repeats them. When neither has any text, what the agent
 * said in the task's history: A2A §3.7 puts outputs on artifacts and has
 * status messages report progress or ask for input, but some remotes talk
 * only in interim status messages, which the task's history keeps
 * (gemini-cli-a2a-server, which then ends input-required with no message).
 */
export function replyText(task: Task, sentId: string): string {
  const json = Task.toJSON(task) as TaskJson;
  const pieces = (json.artifacts ?? [])
    // A remote Arbiter's records of its own tool calls and sub-agent replies stay in its log; ours records the call.
    .filter((a) => !isWorkRecord(a))
    .map((a) => partsText(a.parts))
    .filter((s) => s.trim().length > 0);
  const statusText = partsText(json.status?.message?.parts);
  const joined = pieces.join('\n\n');
  if (statusText.trim() && !joined.includes(statusText.trim())) pieces.push(statusText);
  if (pieces.length === 0) return historyText(json.history ?? [], sentId);
  return pieces.join('\n\n');
}
