import { createHash } from 'node:crypto';
import { DEFAULT_DIFFICULTY, dialogueDifficulty } from '../core/difficulty.js';
import type { SimulatorCallInput, TurnInput } from '../core/dialogueTurn.js';
import type { EndpointCall } from '../core/rolloutSettingsSchema.js';
import type { Scenario } from '../core/scenario.js';
import { scenarioHashOfJson } from '../core/scenarioHash.js';

/**
 * What a turn journal record was made from, as a hash: a record is reused only by an attempt made
 * from the same input, so a reply is never taken for a prompt it did not answer (the opening written
 * again differently, a history changed by a patch, another policy version).
 */

/** JSON with every object's keys sorted, so equal values give equal text whatever order they were built in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const sha256Of = (value: unknown): string => createHash('sha256').update(canonicalJson(value)).digest('hex');

/** An endpoint as far as its answers depend on it: which server, which weights, how they sample. */
function endpointIdentity(endpoint: EndpointCall) {
  return {
    baseURL: endpoint.baseURL,
    model: endpoint.model,
    weightVersion: endpoint.weightVersion ?? null,
    temperature: endpoint.temperature,
    topP: endpoint.topP ?? null,
    maxTokens: endpoint.maxTokens,
  };
}

/** Scenario hashes by JSON text: every turn of a dialogue hashes the same scenario (a few KB, in JavaScript). */
const scenarioHashes = new Map<string, string>();
const SCENARIO_HASHES_MAX = 1024;

function cachedScenarioHash(scenario: Scenario): string {
  const json = JSON.stringify(scenario);
  let hash = scenarioHashes.get(json);
  if (hash === undefined) {
    if (scenarioHashes.size >= SCENARIO_HASHES_MAX) scenarioHashes.clear();
    hash = scenarioHashOfJson(json);
    scenarioHashes.set(json, hash);
  }
  return hash;
}

/** A turn's input: the dialogue so far, the seeds, the scenario, both endpoints' models and the turn number. */
export function turnInputHash(input: TurnInput): string {
  const { settings, scenario } = input;
  const difficulty = dialogueDifficulty(settings.simulator, scenario);
  return sha256Of({
    kind: 'turn',
    turn: input.turn,
    seed: input.seed,
    history: input.history,
    systemPrompt: input.systemPrompt,
    emotion: input.emotion,
    scenario: { id: scenario.id, hash: cachedScenarioHash(scenario) },
    think: settings.think,
    maxTurns: settings.maxTurns,
    policy: endpointIdentity(settings.policy),
    simulator: endpointIdentity(settings.simulator),
    // The level shapes the simulator's prompts; `normal` adds nothing, so journals written before levels still match.
    ...(difficulty !== DEFAULT_DIFFICULTY ? { difficulty } : {}),
  });
}

/** The opening's input: the scenario, the prompt written from it, the seed and the simulator's model. */
export function openingInputHash(input: OpeningInput): string {
  return sha256Of({
    kind: 'opening',
    scenario: { id: input.scenarioId, hash: input.scenarioHash },
    messages: input.messages,
    seed: input.seed,
    simulator: endpointIdentity(input.endpoint),
  });
}

/** The opening as a journalled call: the simulator's call, and the scenario it opens. */
export interface OpeningInput extends SimulatorCallInput {
  scenarioId: string;
  scenarioHash: string;
}
