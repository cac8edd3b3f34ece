import assert from 'node:assert/strict';
import * as timeline from '../../src/core/rolloutTimeline.js';

describe('rolloutTimeline: what the UI shows of a rollout', () => {
  it('signs the emotion change the analysis made, also a fall and no change', () => {
    assert.equal(timeline.userReplySummary(3, 40, 50), 'turn 3 · user reply (analysis: 40 → 50, +10)');
    assert.equal(timeline.userReplySummary(2, 40, 31), 'turn 2 · user reply (analysis: 40 → 31, -9)');
    assert.equal(timeline.userReplySummary(1, 40, 40), 'turn 1 · user reply (analysis: 40 → 40, 0)');
  });

  it('counts turns in the transcript summary', () => {
    assert.equal(timeline.transcriptSummary(1, 'success', 100), 'transcript · 1 turn, success, final emotion 100');
    assert.equal(timeline.transcriptSummary(8, 'goodbye', 62), 'transcript · 8 turns, goodbye, final emotion 62');
  });

  it('details: turn, phase, the emotion path, and the outcome once there is one', () => {
    const details = timeline.rolloutDetails({
      scenarioId: 's1',
      turn: 2,
      maxTurns: 8,
      emotions: [50, 55],
      phase: 'analysis',
      outcome: null,
    });
    assert.equal(details, '**scenario** s1\n**turn** 2 of 8 · **phase** analysis\n**emotion** 55 (50 → 55)');
    assert.match(
      timeline.rolloutDetails({
        scenarioId: 's1',
        turn: 2,
        maxTurns: 8,
        emotions: [50, 55, 5],
        phase: 'done',
        outcome: 'failure',
      }),
      /\*\*outcome\*\* failure$/,
    );
  });
});
