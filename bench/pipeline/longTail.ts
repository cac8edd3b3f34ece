import { createHash } from 'node:crypto';
import type { CallContext, FakeBehaviour } from '../../test/support/fakeOpenAI.js';
import { drawFor, latencyCapMs } from '../load/latencyModel.js';

/**
 * Long-tailed dialogues for the pipeline benchmark: each call's latency is lognormal (median and
 * p99 as bench:load draws them, from a hash of the request), and each dialogue lasts a number of
 * turns drawn for it alone. The fake cannot see which dialogue a call belongs to, so the policy's
 * first reply carries a tag (its own per-call seed, unique to the dialogue), every later call finds
 * it in the history, and the simulated user says goodbye once the dialogue has had its turns.
 */

export const LONG_TAIL_TURNS = { min: 2, max: 8 } as const;
/** p99 over median of a call's latency, as bench:load's defaults (2 s and 10 s). */
export const LONG_TAIL_P99_RATIO = 5;

const TAG = /\[dialogue (\d+)\]/;

function hashOf(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}

/** The dialogue's tag: the one in its history, else (its first policy call) this call's seed. */
function dialogueTag(ctx: CallContext): string | null {
  for (const m of ctx.body.messages) {
    const found = TAG.exec(typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
    if (found) return found[1]!;
  }
  return ctx.role === 'policy' && ctx.body.seed !== undefined ? String(ctx.body.seed) : null;
}

/** Turns of the dialogue with this tag: uniform over [min, max]. */
export function dialogueTurns(tag: string): number {
  return LONG_TAIL_TURNS.min + (hashOf(`turns:${tag}`) % (LONG_TAIL_TURNS.max - LONG_TAIL_TURNS.min + 1));
}

const paramsOf = (medianMs: number, seed = 1) => ({
  medianMs,
  p99Ms: LONG_TAIL_P99_RATIO * medianMs,
  failureRate: 0,
  seed,
});

/** A call timeout no drawn latency reaches (the lognormal's cap, plus room for the fake and the network). */
export function longTailTimeoutMs(medianMs: number): number {
  return latencyCapMs(paramsOf(medianMs)) + 5_000;
}

export function longTailedBehaviour(medianMs: number, seed = 1): FakeBehaviour {
  const params = paramsOf(medianMs, seed);
  return {
    latencyFor: (ctx) =>
      medianMs === 0
        ? 0
        : drawFor(params, JSON.stringify([ctx.role, ctx.body.messages, ctx.body.seed ?? null]), 0).latencyMs,
    policy: (ctx) => `I hear you; tell me more. [dialogue ${dialogueTag(ctx) ?? 0}]`,
    // emotion change 0: the dialogue's length is the drawn turns, not the emotion
    analysis: () => ({ emotionChange: 0 }),
    reply: (ctx) => {
      const tag = dialogueTag(ctx);
      return tag !== null && ctx.turn >= dialogueTurns(tag)
        ? 'Thanks, that helps. Goodbye.'
        : `Turn ${ctx.turn}: and then?`;
    },
  };
}
