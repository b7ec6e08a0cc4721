/** One server-sent event: `event:` (default `message`), the last `id:`, and the `data:` lines joined. */
export interface SseFrame {
  event: string;
  id: string | undefined;
  data: string;
}

/**
 * Reads a `text/event-stream` body frame by frame (the WHATWG parsing rules: `field: value` lines, a blank line
 * ends a frame, `:` lines are comments). `EventSource` is not used because it cannot send `Authorization`.
 */
export async function readSse(body: ReadableStream<Uint8Array>, onFrame: (f: SseFrame) => void): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream() as ReadableWritablePair<string, Uint8Array>).getReader();
  let buf = '';
  let event = '';
  let id: string | undefined;
  let data: string[] = [];
  const line = (l: string): void => {
    if (l === '') {
      if (data.length > 0) onFrame({ event: event || 'message', id, data: data.join('\n') });
      event = '';
      data = [];
      return;
    }
    if (l.startsWith(':')) return;
    const colon = l.indexOf(':');
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) id = value;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        line(l.endsWith('\r') ? l.slice(0, -1) : l);
      }
    }
  } finally {
    reader.releaseLock();
  }
}
