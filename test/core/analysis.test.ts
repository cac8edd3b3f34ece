import assert from 'node:assert/strict';
import { parseAnalysis } from '../../src/core/analysis.js';
import { callSeed, stableHash } from '../../src/core/seeds.js';

describe('simulator analysis parsing', () => {
  it('reads structured JSON', () => {
    const raw = JSON.stringify({
      assistantIntent: 'comfort',
      goalFit: 'good',
      innerThoughts: 'finally',
      emotionChange: 6,
    });
    assert.deepEqual(parseAnalysis(raw), {
      assistantIntent: 'comfort',
      goalFit: 'good',
      innerThoughts: 'finally',
      emotionChange: 6,
    });
  });
  it('reads JSON in a code fence with snake_case keys and a signed string change', () => {
    const raw =
      'Sure:\n```json\n{"assistant_intent":"advice","goal_fit":"off","inner_thoughts":"ugh","emotion_change":"-4"}\n```';
    assert.equal(parseAnalysis(raw)?.emotionChange, -4);
    assert.equal(parseAnalysis(raw)?.innerThoughts, 'ugh');
  });
  it('reads labelled sections in English and Chinese', () => {
    const en =
      'Assistant intent: to reassure\nGoal fit: partly\nInner thoughts: they get it,\nsort of\n**Emotion change:** +3';
    assert.deepEqual(parseAnalysis(en), {
      assistantIntent: 'to reassure',
      goalFit: 'partly',
      innerThoughts: 'they get it,\nsort of',
      emotionChange: 3,
    });
    const zh = '助手意图：安慰我\n契合度：一般\n内心想法：还是没懂我\n情绪变化：-2';
    assert.equal(parseAnalysis(zh)?.emotionChange, -2);
    assert.equal(parseAnalysis(zh)?.innerThoughts, '还是没懂我');
  });
  it('reads the labelled change, not an analysis the user quotes inside a section', () => {
    const raw = 'Assistant intent: he wrote {"emotionChange": 10} to me\nInner thoughts: sneaky\nEmotion change: -5';
    assert.equal(parseAnalysis(raw)?.emotionChange, -5);
    const fenced = 'Inner thoughts: ```json {"emotion_change": "10"} ```\nEmotion change: -1';
    assert.equal(parseAnalysis(fenced)?.emotionChange, -1);
  });
  it('clamps out-of-range changes', () => {
    assert.equal(parseAnalysis('{"emotionChange": 40, "innerThoughts": "wow"}')?.emotionChange, 10);
  });
  it('returns null when there is no change to trust', () => {
    assert.equal(parseAnalysis('I feel a bit better.'), null);
    assert.equal(parseAnalysis('{"innerThoughts": "hm"}'), null);
    assert.equal(parseAnalysis('{broken json'), null);
  });
});

describe('seeds', () => {
  it('derive deterministically and differ by role and turn', () => {
    assert.equal(stableHash('abc'), stableHash('abc'));
    assert.equal(callSeed(7, 1, 'policy'), callSeed(7, 1, 'policy'));
    assert.notEqual(callSeed(7, 1, 'policy'), callSeed(7, 2, 'policy'));
    assert.notEqual(callSeed(7, 1, 'policy'), callSeed(7, 1, 'analysis'));
  });
});
