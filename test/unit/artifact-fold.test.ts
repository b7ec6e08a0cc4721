import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import type { ArtifactJson } from '../../src/common/a2a-json.js';
import { FILE_REF } from '../../src/tasks/task-files.js';
import {
  ArtifactFold,
  artifactsSize,
  foldArtifacts,
  foldWithin,
  OutputTooLarge,
  type TaskEventBody,
} from '../../src/tasks/task-events.js';

const art = (artifactId: string, text: string): ArtifactJson => ({ artifactId, parts: [{ text }] });
const event = (artifact: ArtifactJson, append = false): TaskEventBody => ({
  kind: 'artifact',
  payload: { artifact, append, lastChunk: false },
});

describe('artifact fold', () => {
  // Below and above the count at which the fold switches from scanning its list to a map by id.
  for (const n of [3, 40]) {
    it(`keeps first-seen order, appends and replacements over ${n} artifacts`, () => {
      const base = [art('a0', 'base')];
      const fold = new ArtifactFold(base);
      for (let i = 1; i < n; i++) fold.add(event(art(`a${i}`, `t${i}`)));
      // Appends to every artifact, then a replacement of the first and the last: both keep their places.
      for (let i = 0; i < n; i++) fold.add(event(art(`a${i}`, '+'), true));
      fold.add(event(art('a0', 'new')));
      fold.add(event(art(`a${n - 1}`, 'last')));
      fold.add({ kind: 'usage', payload: { inputTokens: 1, outputTokens: 1 } });
      const list = fold.list();
      assert.deepEqual(
        list.map((a) => a.artifactId),
        Array.from({ length: n }, (_, i) => `a${i}`),
      );
      assert.equal(list[0].parts[0].text, 'new');
      assert.equal(list[n - 1].parts[0].text, 'last');
      for (let i = 1; i < n - 1; i++) assert.deepEqual(list[i].parts, [{ text: `t${i}+` }]);
      // The base and a listed copy are not changed by later events.
      fold.add(event(art('a1', '!'), true));
      assert.deepEqual(base, [art('a0', 'base')]);
      assert.deepEqual(list[1].parts, [{ text: 't1+' }]);
      assert.deepEqual(fold.list()[1].parts, [{ text: 't1+!' }]);
    });
  }

  it('counts the content it is given, and refuses the event past its limit without taking it', () => {
    const base = [{ artifactId: 'f', parts: [{ raw: 'AAAA', mediaType: 'x/y' }, { data: { k: 1 } }] }];
    assert.equal(artifactsSize(base), 4 + JSON.stringify({ k: 1 }).length);
    const fold = new ArtifactFold(base, 20);
    fold.add(event(art('t', 'abcd'), true));
    assert.equal(fold.size, 15);
    assert.throws(
      () => fold.add(event(art('t', 'efghij'), true)),
      (e) => e instanceof OutputTooLarge && e.limit === 20,
    );
    assert.equal(fold.size, 15);
    assert.deepEqual(fold.list()[1].parts, [{ text: 'abcd' }], 'the refused chunk is not in the fold');
    fold.add(event(art('t', 'efghi'), true)); // exactly at the limit
    assert.equal(fold.size, 20);
  });

  it('a replacement swaps the old content for its own; a file stored apart counts as its base64', () => {
    const fold = new ArtifactFold([], 100);
    // A snapshot re-sent as it grows is the size of the last one, not of all of them together.
    for (let n = 10; n <= 90; n += 10) fold.add(event(art('snap', 'x'.repeat(n))));
    assert.equal(fold.size, 90);
    const ref = { mediaType: 'image/png', metadata: { [FILE_REF]: { id: randomUUID(), size: 6 } } };
    fold.add(event({ artifactId: 'img', parts: [ref] }));
    assert.equal(fold.size, 98); // 6 bytes are 8 characters of base64
    assert.throws(() => fold.add(event({ artifactId: 'img2', parts: [ref] })), OutputTooLarge);
  });

  it("a fold for a task's end is given up when its content would pass what can be stored", () => {
    const events = [event(art('a', 'x'.repeat(10))), event(art('a', 'y'.repeat(10)), true)];
    assert.deepEqual(foldWithin([], events, 20), [art('a', 'x'.repeat(10) + 'y'.repeat(10))]);
    assert.equal(foldWithin([], events, 19), undefined);
  });

  it('an append to an artifact not seen yet starts it; a repeated id in the base is one artifact', () => {
    const out = foldArtifacts([art('x', '1'), art('y', '2'), art('x', '3')], [event(art('z', 'new'), true)]);
    assert.deepEqual(out, [art('x', '3'), art('y', '2'), art('z', 'new')]);
    // The same past the count at which the fold indexes by id, the index built from the base itself.
    const base = Array.from({ length: 12 }, (_, i) => art(`b${i % 10}`, `v${i}`));
    const folded = foldArtifacts(base, [event(art('b1', '+'), true), event(art('b10', 'new'))]);
    assert.deepEqual(
      folded.map((a) => [a.artifactId, a.parts[0].text]),
      [...Array.from({ length: 10 }, (_, i) => [`b${i}`, i < 2 ? `v${i + 10}` : `v${i}`]), ['b10', 'new']].map(
        ([id, text]) => (id === 'b1' ? [id, `${text}+`] : [id, text]),
      ),
    );
  });
});
