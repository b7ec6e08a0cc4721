import { useEffect, useRef, useState } from 'preact/hooks';
import { useAccess } from './access';
import { q, TASK_STATES, TERMINAL, type Agent, type Api, type Page, type RequestView } from './api';
import { navigate } from './router';
import { describe, formatDuration, StepClock, type NativeFrame } from './timeline';
import { ErrorBox, errorText, Link, PageTitle, Pager, shortId, StateBadge, useLoad, usePager, When } from './ui';

/** How much of a request's text the task list shows. */
const REQUEST_PREVIEW = 80;

/** The text of the first user message (what was asked), from the task's history. */
function requestText(t: RequestView): string {
  const first = t.history?.find((m) => m.role === 'ROLE_USER');
  return (first?.parts ?? []).map((p) => p.text ?? '').join('');
}

function RequestPreview(props: { text: string }) {
  const one = props.text.replace(/\s+/g, ' ').trim();
  if (!one) return <span class="muted">—</span>;
  const short = one.length > REQUEST_PREVIEW ? `${one.slice(0, REQUEST_PREVIEW - 1)}…` : one;
  return (
    <span class="request-text" title={one.length > REQUEST_PREVIEW ? one : undefined}>
      {short}
    </span>
  );
}

export function TaskList(props: { api: Api; search: URLSearchParams }) {
  const { api, search } = props;
  const agentId = search.get('agent_id') ?? '';
  const state = search.get('state') ?? '';
  const context = search.get('context_id') ?? '';
  const [contextDraft, setContextDraft] = useState(context);
  const filterKey = `${agentId}|${state}|${context}`;
  const pager = usePager(filterKey);
  const access = useAccess();
  // The agent filter offers the tenant's agents when the credential may list them; else it takes an id.
  const agents = useLoad(
    (signal) => (access.readAgents ? api.get<Page<Agent>>('/v1/agents?limit=200', signal) : Promise.resolve(undefined)),
    [],
  );
  const tasks = useLoad(
    (signal) =>
      api.get<Page<RequestView>>(
        `/v1/requests${q({ agent_id: agentId, state, context_id: context, limit: 25, cursor: pager.cursor })}`,
        signal,
      ),
    [filterKey, pager.cursor],
  );
  const setFilter = (k: string, v: string): void => {
    const s = new URLSearchParams(search);
    if (v) s.set(k, v);
    else s.delete(k);
    const str = s.toString();
    navigate(`/tasks${str ? `?${str}` : ''}`, true);
  };
  return (
    <section>
      <PageTitle>Tasks</PageTitle>
      <form
        class="filters"
        role="search"
        aria-label="Filter tasks"
        onSubmit={(e) => {
          e.preventDefault();
          setFilter('context_id', contextDraft.trim());
        }}
      >
        <div class="field">
          <label for="flt-agent">Agent</label>
          {access.readAgents ? (
            <select id="flt-agent" value={agentId} onChange={(e) => setFilter('agent_id', e.currentTarget.value)}>
              <option value="">all agents</option>
              {agents.data?.items.map((a) => (
                <option key={a.id} value={a.id}>
                  {a.id}
                </option>
              ))}
              {agentId && agents.data && !agents.data.items.some((a) => a.id === agentId) ? (
                <option value={agentId}>{agentId}</option>
              ) : null}
            </select>
          ) : (
            <input
              id="flt-agent"
              value={agentId}
              placeholder="any agent (id)"
              onChange={(e) => setFilter('agent_id', e.currentTarget.value.trim())}
            />
          )}
        </div>
        <div class="field">
          <label for="flt-state">State</label>
          <select id="flt-state" value={state} onChange={(e) => setFilter('state', e.currentTarget.value)}>
            <option value="">any state</option>
            {TASK_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="flt-context">Context id</label>
          <input id="flt-context" value={contextDraft} onInput={(e) => setContextDraft(e.currentTarget.value)} />
        </div>
        <button type="submit">Apply</button>
        <button type="button" onClick={() => tasks.reload()}>
          Refresh
        </button>
      </form>
      <ErrorBox error={tasks.error} />
      {tasks.data ? (
        tasks.data.items.length === 0 ? (
          <p>No tasks match.</p>
        ) : (
          <table>
            <caption class="sr-only">Tasks, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Request</th>
                <th scope="col">Agent</th>
                <th scope="col">State</th>
                <th scope="col">Context</th>
                <th scope="col">Created</th>
                <th scope="col">Updated</th>
                <th scope="col">Tokens in/out</th>
              </tr>
            </thead>
            <tbody>
              {tasks.data.items.map((t) => (
                <tr key={t.id}>
                  <td>
                    <Link to={`/tasks/${t.id}`}>
                      <code>{shortId(t.id)}</code>
                    </Link>
                  </td>
                  <td data-testid="request-text">
                    <RequestPreview text={requestText(t)} />
                  </td>
                  <td>{t.agent_id}</td>
                  <td>
                    <StateBadge state={t.state} />
                  </td>
                  <td>
                    <Link to={`/tasks?context_id=${encodeURIComponent(t.context_id)}`}>
                      <code>{shortId(t.context_id)}</code>
                    </Link>
                  </td>
                  <td data-testid="created">
                    <When at={t.created_at} />
                  </td>
                  <td>
                    <When at={t.updated_at} />
                  </td>
                  <td>
                    {t.input_tokens}/{t.output_tokens}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
      {tasks.data ? <Pager pager={pager} nextCursor={tasks.data.next_cursor} /> : null}
    </section>
  );
}

/**
 * One entry of the timeline: consecutive text from one agent at one depth is one entry that grows. `at` is when
 * its (first) event was stored; `took` how long the tool call or sub-agent it closes ran (see `StepClock`).
 */
type Entry =
  | { kind: 'text'; seq: number; at?: string; agent: string; depth: number; content: string }
  | { kind: 'event'; seq: number; at?: string; took?: number; name: string; data: Record<string, unknown> };

/** An entry's time: the clock time, and how far into the task it came (the first event is +0). */
function EntryTime(props: { at: string | undefined; start: string | undefined }) {
  if (!props.at) return null;
  const t = Date.parse(props.at);
  const from = props.start ? Date.parse(props.start) : NaN;
  return (
    <time class="ev-time" dateTime={props.at} title={new Date(t).toLocaleString()}>
      {new Date(t).toLocaleTimeString()}
      {Number.isFinite(from) ? ` (+${formatDuration(t - from)})` : ''}
    </time>
  );
}

/** The task's whole run: created to its last state change when it has ended. */
function taskDuration(t: RequestView): string {
  if (!TERMINAL.has(t.state)) return 'running';
  return formatDuration(Date.parse(t.updated_at) - Date.parse(t.created_at));
}

/** Native frames that mark a change of the task's state. */
const STATE_FRAMES = new Set(['stream_start', 'input_required', 'done']);

/**
 * The live timeline of one task, from `/v1/requests/:id/events`: the stored events, then live ones. When the
 * stream drops before the task ends it reconnects with `since_seq` = the last seq seen (backing off to 5 s).
 */
export function TaskPage(props: { api: Api; id: string }) {
  const { api, id } = props;
  const access = useAccess();
  const [task, setTask] = useState<RequestView | null>(null);
  const [entries, setEntries] = useState<Entry[]>([]);
  const [conn, setConn] = useState<'connecting' | 'live' | 'reconnecting' | 'ended'>('connecting');
  const [error, setError] = useState<unknown>(null);
  const [cancelError, setCancelError] = useState<unknown>(null);
  const lastSeq = useRef(0);

  useEffect(() => {
    const ctl = new AbortController();
    lastSeq.current = 0;
    setEntries([]);
    const clock = new StepClock();
    const add = (name: string, f: NativeFrame): void => {
      const took = clock.see(name, f);
      setEntries((list) => {
        const seq = f.seq ?? 0;
        const at = f.created_at;
        if (name === 'text') {
          const last = list[list.length - 1];
          const agent = f.agent ?? '';
          const depth = f.depth ?? 0;
          if (last && last.kind === 'text' && last.agent === agent && last.depth === depth) {
            return [...list.slice(0, -1), { ...last, seq, content: last.content + (f.content ?? '') }];
          }
          return [...list, { kind: 'text', seq, at, agent, depth, content: f.content ?? '' }];
        }
        return [...list, { kind: 'event', seq, at, took, name, data: f }];
      });
    };
    let reads = 0;
    void (async () => {
      let delay = 250;
      while (!ctl.signal.aborted) {
        let t: RequestView;
        try {
          const n = ++reads;
          t = await api.get<RequestView>(`/v1/requests/${encodeURIComponent(id)}`, ctl.signal);
          if (n === reads) setTask(t);
          setError(null);
        } catch (err) {
          if (ctl.signal.aborted) return;
          setError(err);
          setConn('reconnecting');
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, 5_000);
          continue;
        }
        // Only an ended task ends the timeline: one waiting for input goes on when it is answered (from anywhere).
        if (TERMINAL.has(t.state) && lastSeq.current >= t.last_seq) {
          setConn('ended');
          return;
        }
        try {
          setConn(lastSeq.current > 0 ? 'reconnecting' : 'connecting');
          await api.stream(
            `/v1/requests/${encodeURIComponent(id)}/events${q({ since_seq: lastSeq.current })}`,
            {
              signal: ctl.signal,
              onOpen: () => {
                setConn('live');
                delay = 250;
              },
            },
            (frame) => {
              setConn('live');
              delay = 250;
              const seq = Number(frame.id);
              if (Number.isInteger(seq) && seq > lastSeq.current) lastSeq.current = seq;
              let data: NativeFrame = {};
              try {
                data = JSON.parse(frame.data) as NativeFrame;
              } catch {
                return;
              }
              add(frame.event, data);
              // The state moved (started, waits for input, ended): read it again for the facts above.
              if (STATE_FRAMES.has(frame.event)) {
                const n = ++reads;
                api.get<RequestView>(`/v1/requests/${encodeURIComponent(id)}`, ctl.signal).then(
                  (t) => n === reads && setTask(t), // an older read answering late does not undo a newer one
                  () => {},
                );
              }
            },
          );
        } catch (err) {
          if (ctl.signal.aborted) return;
          setError(err);
        }
        if (ctl.signal.aborted) return;
        // The stream ended: the task is over (the next read says so) or the connection dropped (resume).
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 5_000);
      }
    })();
    return () => ctl.abort();
  }, [api, id]);

  const cancel = async (): Promise<void> => {
    setCancelError(null);
    try {
      setTask(await api.call<RequestView>('POST', `/v1/requests/${encodeURIComponent(id)}/cancel`));
    } catch (err) {
      setCancelError(err);
    }
  };

  const running = task && !TERMINAL.has(task.state);
  const start = entries[0]?.at;
  return (
    <section>
      <PageTitle>Task {shortId(id)}</PageTitle>
      <ErrorBox error={error} />
      {task ? (
        <dl class="facts">
          <dt>State</dt>
          <dd data-testid="task-state">
            <StateBadge state={task.state} />
          </dd>
          <dt>Agent</dt>
          <dd>
            {access.readAgents || access.invoke ? (
              <Link to={`/agents/${encodeURIComponent(task.agent_id)}`}>{task.agent_id}</Link>
            ) : (
              task.agent_id
            )}
          </dd>
          <dt>Context</dt>
          <dd>
            <Link to={`/tasks?context_id=${encodeURIComponent(task.context_id)}`}>
              <code>{task.context_id}</code>
            </Link>
          </dd>
          <dt>Task id</dt>
          <dd>
            <code>{task.id}</code>
          </dd>
          <dt>Created</dt>
          <dd>
            <When at={task.created_at} />
          </dd>
          <dt>Duration</dt>
          <dd data-testid="task-duration">{taskDuration(task)}</dd>
          <dt>Timeline</dt>
          <dd aria-live="polite" data-testid="stream-state">
            {conn === 'live' ? 'live' : conn === 'ended' ? 'complete' : conn}
            {lastSeq.current > 0 ? ` (seq ${lastSeq.current})` : ''}
          </dd>
        </dl>
      ) : null}
      {running && access.invoke ? (
        <p>
          <button type="button" class="danger" onClick={() => void cancel()}>
            Cancel task
          </button>
        </p>
      ) : null}
      <ErrorBox error={cancelError} />
      <h2>Timeline</h2>
      <ol class="timeline" aria-label="Events">
        {entries.map((e, i) =>
          e.kind === 'text' ? (
            <li key={i} class={`ev ev-text depth-${Math.min(e.depth, 3)}`} data-event="text">
              <EntryTime at={e.at} start={start} />
              <span class="ev-name">
                {e.agent}
                {e.depth > 0 ? ` (depth ${e.depth})` : ''}
              </span>
              <div class="ev-text-body">{e.content}</div>
            </li>
          ) : (
            <li key={i} class={`ev ev-${e.name}`} data-event={e.name}>
              <EntryTime at={e.at} start={start} />
              <span class="ev-name">{e.name}</span> <span class="ev-desc">{describe(e.name, e.data)}</span>
              {e.took !== undefined ? (
                <span class="ev-took" data-testid="took">
                  {' '}
                  — took {formatDuration(e.took)}
                </span>
              ) : null}
              {e.name === 'file' && typeof e.data.content === 'string' ? (
                <details>
                  <summary>Content</summary>
                  <pre tabIndex={0}>{e.data.content}</pre>
                </details>
              ) : null}
            </li>
          ),
        )}
      </ol>
      {/* The end is in the timeline once it has been read; before that, the stored error says why. */}
      {task?.error && !entries.some((e) => e.kind === 'event' && e.name === 'done') ? (
        <p class="error">{errorText(new Error(task.error))}</p>
      ) : null}
    </section>
  );
}
