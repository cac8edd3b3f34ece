import assert from 'node:assert/strict';
import type { Transcript } from '../../src/core/transcript.js';
import { TEMPORAL_LIMITS } from '../../src/core/temporalLimits.js';
import { transcriptPartsPrefix } from '../../src/artifacts/keys.js';
import { createRolloutRig, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { localActivityTypes } from '../support/historyMarkers.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';

/** The largest payload anywhere in a history: every `data` byte array of every event. */
function largestPayloadBytes(value: unknown): number {
  if (value instanceof Uint8Array) return value.length;
  if (value === null || typeof value !== 'object') return 0;
  let largest = 0;
  for (const inner of Object.values(value)) largest = Math.max(largest, largestPayloadBytes(inner));
  return largest;
}

describe('rollout workflow: a transcript past the payload limit (real dev server, fake OpenAI server)', function () {
  let rig: RolloutRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  // Local turns reach the server together, when their workflow task completes: were each turn's
  // result to carry its prompt (the dialogue so far), that completion would outgrow a gRPC message.
  for (const [mode, set] of [
    ['one activity per call', ROLLOUT_MODES.perCall],
    ['local turns', ROLLOUT_MODES.localTurn],
  ] as const)
    it(`${mode}: is written in parts as it grows, whole in the store, and no payload carries all of it`, async () => {
      await longDialogue([...set]);
    });

  async function longDialogue(set: string[]): Promise<void> {
    // 60 kB per reply: each turn's prompt holds the dialogue so far, so 8 turns make about 4 MB.
    const long = (label: string, turn: number) => `${label} ${turn}: ${'x'.repeat(60_000)}`;
    rig = await createRolloutRig({
      behaviour: {
        policy: (ctx) => long('assistant', ctx.turn),
        reply: (ctx) => long('user', ctx.turn),
        analysis: () => ({ emotionChange: 1 }),
      },
      set,
    });
    await rig.startWorkers();
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 3, {
      maxTurns: 8,
      initialEmotion: 40,
    });
    const summary = await handle.result();
    assert.equal(summary.turns, 8);
    assert.deepEqual(summary.emotions, [40, 41, 42, 43, 44, 45, 46, 47, 48]);

    const text = await rig.store.getText(summary.artifact);
    assert.ok(text !== null);
    assert.ok(text.length > TEMPORAL_LIMITS.payloadBytes, `transcript of ${text.length} bytes`);
    const transcript = JSON.parse(text) as Transcript;
    assert.deepEqual(
      transcript.turns.map((t) => t.turn),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
    for (const [i, turn] of transcript.turns.entries()) {
      // Compared as booleans: a diff of 60 kB strings helps nobody.
      assert.ok(turn.policy.reply === long('assistant', i + 1), `turn ${i + 1}: the policy's reply`);
      if (i > 0) assert.ok(turn.userMessage === transcript.turns[i - 1]?.userReply?.text, `turn ${i + 1}: user`);
      assert.equal(turn.promptMessages.length, 2 + 2 * i, `turn ${i + 1} prompt holds the dialogue so far`);
    }
    assert.equal(transcript.reward, summary.reward);
    assert.deepEqual(await rig.store.list(transcriptPartsPrefix(null, summary.rolloutId)), [], 'parts removed');

    // The history is bigger than a gRPC message may be: read it a few events at a time.
    const events = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await rig.client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId: handle.workflowId },
        maximumPageSize: 4,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      events.push(...(page.history?.events ?? []));
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    // Queued activities or local ones (the default), in the order they were recorded.
    const activities = events
      .flatMap((e) => localActivityTypes([e]).concat(e.activityTaskScheduledEventAttributes?.activityType?.name ?? []))
      .filter((name) => name.startsWith('saveTranscript'));
    assert.ok(activities.filter((a) => a === 'saveTranscriptPart').length >= 3, activities.join(', '));
    assert.equal(activities[activities.length - 1], 'saveTranscriptFromParts');
    assert.ok(!activities.includes('saveTranscript'));
    const largest = largestPayloadBytes(events);
    // The largest is the last turn's prompt (the dialogue so far), far from the whole transcript.
    assert.ok(largest < TEMPORAL_LIMITS.payloadBytes && largest < text.length / 3, `largest payload ${largest} bytes`);
  }
});
