import { useRef, useState } from 'preact/hooks';
import { ApiError, type Api } from './api';
import { ErrorBox, Link, PageTitle, shortId } from './ui';

/** A2A v1.0 ProtoJSON shapes the chat reads (a subset). */
interface Part {
  text?: string;
  data?: unknown;
  file?: { name?: string; mediaType?: string; fileWithBytes?: string; fileWithUri?: string };
  raw?: string;
  url?: string;
  filename?: string;
  mediaType?: string;
}
interface A2aMessage {
  messageId?: string;
  role?: string;
  parts?: Part[];
}
interface Artifact {
  artifactId: string;
  name?: string;
  parts: Part[];
}
interface Status {
  state?: string;
  message?: A2aMessage;
}
interface StreamResponse {
  task?: { id: string; contextId: string; status?: Status; artifacts?: Artifact[] };
  message?: A2aMessage & { taskId?: string; contextId?: string };
  statusUpdate?: { taskId: string; contextId: string; status?: Status };
  artifactUpdate?: { taskId: string; contextId: string; artifact: Artifact; append?: boolean };
}

interface Turn {
  /** The user's text. */
  user: string;
  taskId?: string;
  state?: string;
  /** Artifacts in arrival order; text ones grow in place as chunks stream in. */
  artifacts: Artifact[];
  /** The status message text (input-required prompts, failures). */
  statusText?: string;
  error?: string;
}

const stateName = (s: string | undefined): string =>
  (s ?? '')
    .replace(/^TASK_STATE_/, '')
    .toLowerCase()
    .replace('_', '-');

const partsText = (parts: Part[] | undefined): string => (parts ?? []).map((p) => p.text ?? '').join('');

function ArtifactView(props: { a: Artifact }) {
  const { a } = props;
  const isText = a.parts.every((p) => p.text !== undefined);
  if (isText && (a.name === 'response' || !a.name)) {
    return <div class="reply">{partsText(a.parts)}</div>;
  }
  return (
    <div class="artifact">
      <span class="ev-name">artifact {a.name ?? a.artifactId}</span>
      {a.parts.map((p, i) =>
        p.text !== undefined ? (
          <div key={i}>{p.text}</div>
        ) : p.data !== undefined ? (
          <pre key={i} tabIndex={0}>
            {JSON.stringify(p.data, null, 2)}
          </pre>
        ) : (
          <div key={i}>
            file {p.filename ?? p.file?.name ?? ''} ({p.mediaType ?? p.file?.mediaType ?? 'unknown type'})
          </div>
        ),
      )}
    </div>
  );
}

/**
 * "Try an agent": sends through the agent's A2A REST binding (`POST …/message:stream`, A2A 1.0, SSE read over
 * fetch), shows the reply growing and the artifacts; an `input-required` turn is continued in the same task,
 * later turns stay in the same context.
 */
export function Chat(props: { api: Api; id: string }) {
  const { api, id } = props;
  const [turns, setTurns] = useState<Turn[]>([]);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const contextId = useRef<string | undefined>(undefined);
  /** The task waiting for input, continued by the next message. */
  const pendingTask = useRef<string | undefined>(undefined);
  const abort = useRef<AbortController | null>(null);

  const update = (fn: (t: Turn) => Turn): void =>
    setTurns((list) => (list.length === 0 ? list : [...list.slice(0, -1), fn(list[list.length - 1] as Turn)]));

  const send = async (e: Event): Promise<void> => {
    e.preventDefault();
    const message = text.trim();
    if (!message || busy) return;
    setText('');
    setBusy(true);
    setError(null);
    setTurns((list) => [...list, { user: message, artifacts: [] }]);
    const ctl = new AbortController();
    abort.current = ctl;
    const body = {
      message: {
        messageId: crypto.randomUUID(),
        role: 'ROLE_USER',
        parts: [{ text: message }],
        ...(contextId.current ? { contextId: contextId.current } : {}),
        ...(pendingTask.current ? { taskId: pendingTask.current } : {}),
      },
    };
    pendingTask.current = undefined;
    try {
      await api.stream(
        `/v1/a2a/agents/${encodeURIComponent(id)}/message:stream`,
        { method: 'POST', body, headers: { 'A2A-Version': '1.0' }, signal: ctl.signal },
        (frame) => {
          let r: StreamResponse & { error?: { message?: string } };
          try {
            r = JSON.parse(frame.data) as typeof r;
          } catch {
            return;
          }
          if (frame.event === 'error' || r.error) {
            update((t) => ({ ...t, error: r.error?.message ?? 'the stream failed' }));
            return;
          }
          if (r.task) {
            contextId.current = r.task.contextId;
            const task = r.task;
            update((t) => ({
              ...t,
              taskId: task.id,
              state: stateName(task.status?.state),
              artifacts: task.artifacts ?? t.artifacts,
            }));
          } else if (r.artifactUpdate) {
            const { artifact, append } = r.artifactUpdate;
            update((t) => {
              const i = t.artifacts.findIndex((a) => a.artifactId === artifact.artifactId);
              if (i < 0) return { ...t, artifacts: [...t.artifacts, artifact] };
              const prev = t.artifacts[i] as Artifact;
              const next = append ? { ...prev, parts: [...prev.parts, ...artifact.parts] } : artifact;
              return { ...t, artifacts: t.artifacts.map((a, j) => (j === i ? next : a)) };
            });
          } else if (r.statusUpdate) {
            const st = r.statusUpdate.status;
            contextId.current = r.statusUpdate.contextId;
            const taskId = r.statusUpdate.taskId;
            const state = stateName(st?.state);
            if (state === 'input-required') pendingTask.current = taskId;
            update((t) => ({ ...t, taskId, state, statusText: partsText(st?.message?.parts) || t.statusText }));
          } else if (r.message) {
            const m = r.message;
            if (m.contextId) contextId.current = m.contextId;
            update((t) => ({ ...t, state: 'completed', statusText: partsText(m.parts) }));
          }
        },
      );
    } catch (err) {
      if (!ctl.signal.aborted) {
        setError(err);
        update((t) => ({ ...t, error: err instanceof ApiError ? err.message : String(err) }));
      }
    } finally {
      setBusy(false);
      abort.current = null;
    }
  };

  /**
   * Cancels the task of the turn that is working (A2A REST `CancelTask`, §3.1.5): the stream then brings its
   * `canceled` status and ends. A task that ended meanwhile answers 409 (not cancelable), shown as the error.
   */
  const cancel = async (taskId: string): Promise<void> => {
    setError(null);
    try {
      await api.call(
        'POST',
        `/v1/a2a/agents/${encodeURIComponent(id)}/tasks/${encodeURIComponent(taskId)}:cancel`,
        undefined,
        undefined,
        { 'A2A-Version': '1.0' },
      );
    } catch (err) {
      setError(err);
    }
  };

  const last = turns[turns.length - 1];
  const waiting = last?.state === 'input-required';
  /** The task a Cancel button would cancel: the working turn's. */
  const cancelable = busy && (last?.state === 'working' || last?.state === 'submitted') ? last.taskId : undefined;
  return (
    <section class="chat">
      <PageTitle>Try {id}</PageTitle>
      <p class="muted">
        Sent through the agent's A2A endpoint (REST binding, streaming).{' '}
        {contextId.current ? (
          <>
            Context <code>{shortId(contextId.current)}</code> —{' '}
            <button
              type="button"
              class="link"
              onClick={() => {
                contextId.current = undefined;
                pendingTask.current = undefined;
                setTurns([]);
              }}
            >
              start a new conversation
            </button>
          </>
        ) : null}
      </p>
      <ol class="turns" aria-label="Conversation" aria-live="polite">
        {turns.map((t, i) => (
          <li key={i} class="turn">
            <div class="bubble user">
              <span class="sr-only">You: </span>
              {t.user}
            </div>
            <div class="bubble agent" data-testid="agent-turn">
              {t.artifacts.map((a) => (
                <ArtifactView key={a.artifactId} a={a} />
              ))}
              {t.statusText && t.state !== 'completed' ? <div class="status-text">{t.statusText}</div> : null}
              {t.error ? <div class="error">{t.error}</div> : null}
              <div class="turn-meta">
                {t.state ? <span class={`badge state-${t.state}`}>{t.state}</span> : <span>sending…</span>}
                {t.taskId ? (
                  <Link to={`/tasks/${t.taskId}`}>
                    timeline of <code>{shortId(t.taskId)}</code>
                  </Link>
                ) : null}
              </div>
            </div>
          </li>
        ))}
      </ol>
      <ErrorBox error={error} />
      <form class="composer" onSubmit={(e) => void send(e)}>
        <label for="chat-input">{waiting ? 'Your answer (continues the task)' : 'Message'}</label>
        <textarea
          id="chat-input"
          rows={3}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void send(e);
          }}
        />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || !text.trim()}>
            Send
          </button>
          {cancelable ? (
            <button type="button" class="danger" onClick={() => void cancel(cancelable)}>
              Cancel task
            </button>
          ) : null}
          {busy ? (
            <button type="button" onClick={() => abort.current?.abort()}>
              Stop watching
            </button>
          ) : null}
          <small class="hint">Ctrl+Enter sends.</small>
        </div>
      </form>
    </section>
  );
}
