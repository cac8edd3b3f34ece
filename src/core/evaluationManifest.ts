import { DEFAULT_DIFFICULTY, SIMULATOR_DIFFICULTIES, type SimulatorDifficulty } from './difficulty.js';
import { simulatorPromptHash } from './prompts/simulatorPromptHash.js';
import { singleLevel, type DifficultyShares } from './training/difficultyMix.js';
import type { RolloutSettings } from './rolloutSettingsSchema.js';
import { stableHash } from './seeds.js';
import { ATTUNE_VERSION } from './version.js';
import type { ServedModel } from './servedModel.js';

/**
 * What a reward was measured in: the simulated user (endpoint, model, prompt templates) and the dialogue
 * protocol. Two rewards, or two scores, are comparable only where these agree; every evaluation's
 * manifest and every training step's record carries it.
 */
export interface RewardEnvironment {
  /**
   * `served`: what the endpoint lists under that name (evaluations since it was recorded).
   * `difficulty`: the simulated user's level, written only when it is not `normal`, so manifests of
   * the default level are those of versions before levels, and compare with them as equal.
   * `difficultyMix`: a training step's shares of levels (`training.difficultyMix`), when it mixed.
   */
  simulator: {
    baseURL: string;
    model: string;
    served?: ServedModel;
    difficulty?: SimulatorDifficulty;
    difficultyMix?: DifficultyShares;
  };
  /** Fingerprint of the simulated user's prompt templates (prompts/simulatorPromptHash.ts), at the levels it played. */
  promptHash: string;
  /**
   * Its dialogue settings are listed by hand, not spread from DIALOGUE_KEYS: a key added here is
   * `absent` in every older manifest, and `eval compare` refuses such pairs. Adding a dialogue
   * setting to the protocol is a decision (with a rule for the manifests that lack it); a test
   * fails until it is made.
   */
  protocol: {
    initialEmotion: number;
    maxTurns: number;
    think: boolean;
    simulatorTemperature: number;
    policyTemperature: number;
    simulatorMaxTokens: number;
    policyMaxTokens: number;
    structuredOutput: string;
    /** `default`, or `custom:<hash>` for a configured policy system prompt. */
    policySystemPrompt: string;
  };
}

/** What makes two evaluations' numbers comparable, stored with every evaluation report. */
export interface EvaluationManifest extends RewardEnvironment {
  attuneVersion: string;
  policy: { baseURL: string; model: string };
  seeds: {
    base: number;
    repeats: number;
    /** Each scenario's seeds, one per repeat. */
    dialogues: Record<string, number[]>;
  };
  /** Each scenario's content hash as its dialogues loaded it (scenarioHash.ts); absent in older manifests. */
  scenarios?: Record<string, string>;
}

/**
 * The environment of dialogues played with `settings`; `shares`: a training step's mix of levels
 * (its dialogues' levels come from it, not from the settings). A scenario's own level is in its hash.
 */
export function rewardEnvironment(settings: RolloutSettings, shares?: DifficultyShares): RewardEnvironment {
  const mixed = shares !== undefined && singleLevel(shares) === null;
  const level = (shares && singleLevel(shares)) ?? settings.simulator.difficulty ?? DEFAULT_DIFFICULTY;
  const levels = mixed ? SIMULATOR_DIFFICULTIES.filter((l) => (shares[l] ?? 0) > 0) : [level];
  return {
    simulator: {
      baseURL: settings.simulator.baseURL,
      model: settings.simulator.model,
      ...(mixed ? { difficultyMix: shares } : level !== DEFAULT_DIFFICULTY ? { difficulty: level } : {}),
    },
    promptHash: simulatorPromptHash(levels),
    protocol: {
      initialEmotion: settings.initialEmotion,
      maxTurns: settings.maxTurns,
      think: settings.think,
      simulatorTemperature: settings.simulator.temperature,
      policyTemperature: settings.policy.temperature,
      simulatorMaxTokens: settings.simulator.maxTokens,
      policyMaxTokens: settings.policy.maxTokens,
      structuredOutput: settings.simulator.structuredOutput,
      policySystemPrompt:
        settings.policySystemPrompt === undefined
          ? 'default'
          : `custom:${stableHash(settings.policySystemPrompt).toString(16).padStart(8, '0')}`,
    },
  };
}

/** The reward environment with what the simulator's endpoint said it serves, where it said. */
export function servedRewardEnvironment(settings: RolloutSettings, served?: ServedModel): RewardEnvironment {
  const environment = rewardEnvironment(settings);
  return served ? { ...environment, simulator: { ...environment.simulator, served } } : environment;
}

export function evaluationManifest(
  settings: RolloutSettings,
  seeds: { base: number; repeats: number; dialogues: { scenarioId: string; seed: number }[] },
  scenarios: Record<string, string> = {},
  served?: ServedModel,
): EvaluationManifest {
  const dialogues: Record<string, number[]> = {};
  for (const d of seeds.dialogues) dialogues[d.scenarioId] = [...(dialogues[d.scenarioId] ?? []), d.seed];
  const { simulator, promptHash, protocol } = servedRewardEnvironment(settings, served);
  return {
    attuneVersion: ATTUNE_VERSION,
    simulator,
    policy: { baseURL: settings.policy.baseURL, model: settings.policy.model },
    promptHash,
    protocol,
    seeds: { base: seeds.base, repeats: seeds.repeats, dialogues },
    ...(Object.keys(scenarios).length > 0 ? { scenarios } : {}),
  };
}

function flatten(value: unknown, prefix: string, out: Map<string, string>): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, inner] of Object.entries(value)) flatten(inner, prefix ? `${prefix}.${key}` : key, out);
  } else out.set(prefix, JSON.stringify(value));
}

// The policy is what a comparison compares; per-dialogue seeds follow from the base seed and the
// scenarios; why a listing was unavailable is not the environment.
const NOT_PROTOCOL = [/^policy\./, /^seeds\.dialogues\./, /^simulator\.served\.unavailable$/];
/** Fields compared only where both manifests have them. */
const ONE_SIDED = [/^scenarios\./, /^simulator\.served\./];

/** A manifest field in which two evaluations differ, with both values (JSON), `absent` where one lacks it. */
export interface ManifestDifference {
  field: string;
  a: string;
  b: string;
}

/**
 * The fields that make two scores incomparable: the protocol, the simulated user (endpoint and model)
 * and its prompts. A different Attune version or base seed is a warning only: the same protocol with
 * other dialogues is still the same measurement.
 */
const ENVIRONMENT = [/^protocol\./, /^simulator\./, /^promptHash$/, /^scenarios\./];

export function isEnvironmentField(field: string): boolean {
  return ENVIRONMENT.some((re) => re.test(field));
}

/** A manifest with its level named: an absent one is `normal`, and a difference says so rather than `absent`. */
function withLevel(m: EvaluationManifest): EvaluationManifest {
  return m.simulator.difficulty !== undefined || m.simulator.difficultyMix !== undefined
    ? m
    : { ...m, simulator: { ...m.simulator, difficulty: DEFAULT_DIFFICULTY } };
}

/** The manifest fields (dotted paths, sorted) in which two evaluations differ; the policy is what is compared. */
export function manifestFieldDifferences(a: EvaluationManifest, b: EvaluationManifest): ManifestDifference[] {
  const fa = new Map<string, string>();
  const fb = new Map<string, string>();
  flatten(withLevel(a), '', fa);
  flatten(withLevel(b), '', fb);
  // A scenario only one side evaluated is not a difference in the one both did, nor is a served
  // model that one side could not list (or recorded before the listing was).
  const oneSided = (k: string) => ONE_SIDED.some((re) => re.test(k)) && (!fa.has(k) || !fb.has(k));
  const keys = [...new Set([...fa.keys(), ...fb.keys()])]
    .filter((k) => !NOT_PROTOCOL.some((re) => re.test(k)) && !oneSided(k))
    .sort();
  return keys
    .filter((k) => fa.get(k) !== fb.get(k))
    .map((field) => ({ field, a: fa.get(field) ?? 'absent', b: fb.get(field) ?? 'absent' }));
}

/**
 * The manifest fields in which two evaluations differ, as sentences naming the field and both
 * values; a missing manifest (a report written before manifests) is one warning of its own.
 */
export function manifestDifferences(
  a: EvaluationManifest | null | undefined,
  b: EvaluationManifest | null | undefined,
  names: { a: string; b: string } = { a: 'A', b: 'B' },
): string[] {
  if (!a || !b) {
    const missing = [!a ? names.a : null, !b ? names.b : null].filter((n) => n !== null);
    return [
      `no manifest for ${missing.join(' and ')} (written before manifests): protocol differences cannot be checked`,
    ];
  }
  return manifestFieldDifferences(a, b).map(
    (d) => `protocol differs: ${d.field} is ${d.a} in ${names.a}, ${d.b} in ${names.b}`,
  );
}
