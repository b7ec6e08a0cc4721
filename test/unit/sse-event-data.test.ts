import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventTooDeep, SseEventData } from '../../src/a2a-outbound/egress-stream.js';

/** The events' data of `text` as `SseEventData` gathers it, line by line, and what the stream's end leaves. */
function events(text: string): (string | undefined)[] {
  const e = new SseEventData();
  const out: (string | undefined)[] = [];
  for (const line of text.split('\n').slice(0, -1)) {
    const d = e.line(line);
    if (d !== undefined) out.push(d);
  }
  return [...out, e.end()];
}

describe("an event stream's data, gathered as a client does before parsing it", () => {
  it('joins the data lines of an event with a line end, drops one space after the colon and other fields', () => {
    assert.deepEqual(events('event: x\ndata: {"a":\ndata:1}\nid: 7\n\n: comment\ndata: [2]\n\n'), [
      '{"a":\n1}',
      '[2]',
      undefined,
    ]);
  });

  it('ends an event at a blank line with CR LF line ends too, and keeps an unended one for the end', () => {
    assert.deepEqual(events('data: a\r\n\r\ndata: b\n'), ['a', 'b']);
    assert.equal(new SseEventData().line('data: a'), undefined);
  });

  it('judges the nesting of the joined data: shallow lines that open one deep value are too deep', () => {
    const deep = `${'{"a":'.repeat(100)}1${'}'.repeat(100)}`;
    const asLines = `data: ${deep.replaceAll(':{', ':\ndata: {')}\n\n`;
    assert.ok(
      asLines.split('\n').every((l) => (l.match(/\{/g) ?? []).length <= 1),
      'each line opens one level',
    );
    const [data] = events(asLines);
    assert.ok(eventTooDeep(data));
    assert.ok(!eventTooDeep(events(`data: ${'['.repeat(10)}${']'.repeat(10)}\n\n`)[0]));
    assert.ok(!eventTooDeep(undefined));
  });
});
