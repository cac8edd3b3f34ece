import assert from 'node:assert/strict';
import type { Transcript, TranscriptTurn } from '../../src/core/transcript.js';
import { joinTranscript, TranscriptPartition, utf8Length } from '../../src/core/transcriptParts.js';

function turn(n: number, text: string): TranscriptTurn {
  return { turn: n, userMessage: text } as unknown as TranscriptTurn;
}

const head = { kind: 'attune.rollout', rolloutId: 'r1', runName: 'run', turns: [] } as unknown as Transcript;

describe('transcript parts', () => {
  it('counts UTF-8 bytes as Buffer does, for ASCII, Chinese and emoji', () => {
    for (const text of ['hello', '你好，世界', 'é', '😀 ok', '\u{10FFFF}', 'a\ud800b'])
      assert.equal(utf8Length(text), Buffer.byteLength(text, 'utf8'), text);
  });

  it('cuts a part once the turns not yet written reach the limit, and joins them back in order', () => {
    const partition = new TranscriptPartition({ runName: 'run', rolloutId: 'r1' }, 250);
    const due = [1, 2, 3, 4, 5, 6, 7].map((n) => {
      const isDue = partition.add(turn(n, 'x'.repeat(100)));
      return isDue ? partition.takePart() : null;
    });
    const parts = due.filter((p) => p !== null);
    assert.deepEqual(
      parts.map((p) => [p.index, p.firstTurn, p.turns.length]),
      [
        [0, 1, 2],
        [1, 3, 2],
        [2, 5, 2],
      ],
    );
    const tail = partition.tail(head);
    assert.equal(tail.parts, 3);
    assert.deepEqual(
      tail.transcript.turns.map((t) => t.turn),
      [7],
    );
    assert.deepEqual(
      joinTranscript(parts, tail).turns.map((t) => t.turn),
      [1, 2, 3, 4, 5, 6, 7],
    );
  });

  it('refuses to join parts with a gap or out of order, naming the turn', () => {
    const partition = new TranscriptPartition({ runName: 'run', rolloutId: 'r1' }, 1);
    partition.add(turn(1, 'a'));
    const first = partition.takePart();
    partition.add(turn(2, 'b'));
    const second = partition.takePart();
    partition.add(turn(3, 'c'));
    const tail = partition.tail(head);
    assert.throws(() => joinTranscript([second, first], tail), /transcript part 0 holds index 1/);
    assert.throws(() => joinTranscript([first], { ...tail, parts: 1 }), /transcript turn 2 is numbered 3/);
  });
});
