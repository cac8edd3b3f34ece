import { createArtifactActivities } from '../../src/activities/artifacts.js';
import { generatePolicyTurn } from '../../src/activities/policy.js';
import { analyzeAssistantReply, writeUserMessage } from '../../src/activities/simulator.js';
import type { ArtifactStore } from '../../src/artifacts/store.js';
import { Dialogue } from '../../src/core/dialogue.js';
import { playTurn, type DialogueCalls } from '../../src/core/dialogueTurn.js';
import type { RolloutSettings } from '../../src/core/rolloutSettingsSchema.js';
import type { Scenario } from '../../src/core/scenario.js';

/**
 * The two baselines, without Temporal: the same activity functions (so the same prompt builders,
 * the same openai client and code path), the same dialogue as src/workflows/rollout.ts plays
 * (src/core/dialogue.ts), and the same transcript written to the same kind of artifact store at the end.
 */

export interface DialogueSpec {
  rolloutId: string;
  scenario: Scenario;
  seed: number;
}

/** One turn as seen from the loop: wall time, LLM calls made, and the client-measured LLM time in it. */
export interface TurnTiming {
  ms: number;
  calls: number;
  llmMs: number;
}

/** A dialogue of the loops: the calls go straight to the activity functions, counted with the LLM time they measured. */
class LoopDialogue {
  readonly dialogue: Dialogue;
  readonly llm: DialogueCalls;
  calls = 0;
  llmMs = 0;
  private readonly startedAt = new Date().toISOString();

  constructor(
    readonly spec: DialogueSpec,
    settings: RolloutSettings,
  ) {
    this.dialogue = new Dialogue({ settings, scenario: spec.scenario, seed: spec.seed });
    const counted =
      <I, R extends { latencyMs: number }>(call: (input: I) => Promise<R>) =>
      async (input: I): Promise<R> => {
        const result = await call(input);
        this.calls++;
        this.llmMs += result.latencyMs;
        return result;
      };
    this.llm = {
      generatePolicyTurn: counted(generatePolicyTurn),
      analyzeAssistantReply: counted(analyzeAssistantReply),
      writeUserMessage: counted(writeUserMessage),
    };
  }

  open(): Promise<void> {
    return this.dialogue.open(this.llm.writeUserMessage);
  }

  async save(store: ArtifactStore): Promise<string> {
    const { dialogue, spec } = this;
    if (!dialogue.isEnded()) throw new Error(`dialogue ${spec.rolloutId} has not ended`);
    const transcript = dialogue.transcript({
      rolloutId: spec.rolloutId,
      runName: 'bench-orchestration',
      step: null,
      startedAt: this.startedAt,
      finishedAt: new Date().toISOString(),
    });
    return createArtifactActivities(store).saveTranscript(transcript);
  }
}

export interface LoopResult {
  wallS: number;
  calls: number;
  turns: TurnTiming[];
}

/**
 * (a) plain: each dialogue is an async loop, all C of them at once, no Temporal. Turn boundaries
 * match those the benchmark reads from the workflow histories: dialogue start, each policy call,
 * the transcript write.
 */
export async function runPlain(
  specs: DialogueSpec[],
  settings: RolloutSettings,
  store: ArtifactStore,
): Promise<LoopResult> {
  const turns: TurnTiming[] = [];
  let calls = 0;
  const started = performance.now();
  await Promise.all(
    specs.map(async (spec) => {
      const d = new LoopDialogue(spec, settings);
      let mark = performance.now();
      let callsAt = 0;
      let llmAt = 0;
      /** Ends the turn under way (if any) and starts timing the next one. */
      const boundary = (turnUnderWay: boolean) => {
        const now = performance.now();
        if (turnUnderWay) turns.push({ ms: now - mark, calls: d.calls - callsAt, llmMs: d.llmMs - llmAt });
        mark = now;
        callsAt = d.calls;
        llmAt = d.llmMs;
      };
      await d.open();
      await d.dialogue.playToEnd((input) => playTurn(d.llm, input), {
        beforeTurn: (input) => boundary(input.turn > 1),
      });
      boundary(true);
      await d.save(store);
      calls += d.calls;
    }),
  );
  return { wallS: (performance.now() - started) / 1000, calls, turns };
}

export interface ReferenceResult extends LoopResult {
  /** Wall time actually measured (the extrapolated part excluded). */
  measuredS: number;
  /** Share of the sequential simulator calls that ran timed, one after another. */
  sequentialMeasuredFraction: number;
  extrapolated: boolean;
}

/**
 * (b) shaped like the reference RLVER rollout: per turn, all live dialogues' policy turns as one
 * concurrent batch, then the simulator (analysis + reply) for each live dialogue, one after another.
 *
 * The sequential part grows as C x 2 x L per turn, so it is timed for as many dialogues as
 * `budgetS` allows (spread evenly over the timed turns, at least one dialogue per turn); the other
 * live dialogues of that turn are then advanced concurrently, untimed, so later turns see the same
 * state, and their sequential time is counted as the measured mean per dialogue of that turn. With `sparse` (used at high latency, where one timed dialogue already costs
 * 2 L per turn), only the first, middle and last turns are timed so; in the others every dialogue is
 * advanced concurrently and counted at the mean of the last timed turn. `extrapolated` says whether
 * any of this happened. Nothing else runs while calls are being timed.
 */
export async function runReference(
  specs: DialogueSpec[],
  settings: RolloutSettings,
  store: ArtifactStore,
  budgetS: number,
  sparse = false,
): Promise<ReferenceResult> {
  const dialogues = specs.map((spec) => new LoopDialogue(spec, settings));
  let measuredMs = 0;
  let estimatedMs = 0;
  let sequentialTotal = 0;
  let sequentialTimed = 0;
  const turns: TurnTiming[] = [];
  let t = performance.now();
  await Promise.all(dialogues.map((d) => d.open()));
  measuredMs += performance.now() - t;
  const timedTurns = sparse ? new Set([1, Math.ceil(settings.maxTurns / 2), settings.maxTurns]) : null;
  const perTurnBudgetMs = (budgetS * 1000) / (timedTurns ? timedTurns.size : settings.maxTurns);
  let perDialogueMs = 0;
  for (let turn = 1; ; turn++) {
    const live = dialogues.filter((d) => !d.dialogue.isEnded());
    if (live.length === 0) break;
    const callsBefore = live.reduce((n, d) => n + d.calls, 0);
    t = performance.now();
    await Promise.all(live.map((d) => d.dialogue.policyStep(d.llm)));
    const batchMs = performance.now() - t;
    const toSimulate = live.filter((d) => !d.dialogue.isEnded());
    let timed = 0;
    let sequentialMs = 0;
    if (timedTurns && !timedTurns.has(turn)) {
      await Promise.all(toSimulate.map((d) => d.dialogue.simulatorStep(d.llm)));
    } else {
      t = performance.now();
      for (const d of toSimulate) {
        if (timed > 0 && performance.now() - t >= perTurnBudgetMs) break;
        await d.dialogue.simulatorStep(d.llm);
        timed++;
      }
      sequentialMs = performance.now() - t;
      const rest = toSimulate.slice(timed);
      if (rest.length > 0) await Promise.all(rest.map((d) => d.dialogue.simulatorStep(d.llm)));
    }
    if (timed > 0) perDialogueMs = sequentialMs / timed;
    // Untimed dialogues (all of them in a turn `sparse` skips) at the last measured mean.
    const turnEstimatedMs = perDialogueMs * (toSimulate.length - timed);
    measuredMs += batchMs + sequentialMs;
    estimatedMs += turnEstimatedMs;
    sequentialTotal += toSimulate.length;
    sequentialTimed += timed;
    turns.push({
      ms: batchMs + sequentialMs + turnEstimatedMs,
      calls: live.reduce((n, d) => n + d.calls, 0) - callsBefore,
      llmMs: 0,
    });
  }
  t = performance.now();
  await Promise.all(dialogues.map((d) => d.save(store)));
  measuredMs += performance.now() - t;
  return {
    wallS: (measuredMs + estimatedMs) / 1000,
    measuredS: measuredMs / 1000,
    calls: dialogues.reduce((n, d) => n + d.calls, 0),
    turns,
    sequentialMeasuredFraction: sequentialTotal === 0 ? 1 : sequentialTimed / sequentialTotal,
    extrapolated: sequentialTimed < sequentialTotal,
  };
}
