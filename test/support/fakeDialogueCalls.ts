import type { DialogueCalls, PolicyTurnInput, SimulatorCallInput } from '../../src/core/dialogueTurn.js';
import { rolloutSettingsSchema, type RolloutSettings } from '../../src/core/rolloutSettingsSchema.js';
import type { Scenario } from '../../src/core/scenario.js';

/** Rollout settings for pure dialogue tests: no endpoint is ever reached. */
export function dialogueSettings(overrides: Partial<RolloutSettings> = {}): RolloutSettings {
  const endpoint = (model: string, taskQueue: string) => ({
    baseURL: 'http://127.0.0.1:1/v1',
    model,
    apiKeyEnv: 'NO_KEY',
    timeoutMs: 1000,
    temperature: 0,
    maxTokens: 64,
    taskQueue,
    retry: {},
  });
  return {
    ...rolloutSettingsSchema.parse({
      initialEmotion: 40,
      maxTurns: 3,
      artifactsTaskQueue: 'artifacts',
      policy: endpoint('fake-policy', 'policy'),
      simulator: endpoint('fake-simulator', 'simulator'),
    }),
    ...overrides,
  };
}

export function dialogueScenario(overrides: Partial<Scenario> = {}): Scenario {
  return {
    id: 'test-stranded',
    language: 'en',
    persona: { name: 'Ana', age: 34, occupation: 'nurse' },
    background: 'Her flight was cancelled and she is stuck at the airport overnight.',
    goal: 'To be heard.',
    hiddenIntention: 'She wants someone to say it is not her fault.',
    personality: 'negative',
    traits: [],
    goalType: 'venting',
    firstMessage: 'My flight got cancelled. Again.',
    ...overrides,
  };
}

export interface FakeCallLog {
  role: 'policy' | 'analysis' | 'reply';
  seed: number;
  messages: SimulatorCallInput['messages'];
}

export interface FakeCallScript {
  /** The emotion change of each analysis, in order (0 once the list runs out). */
  changes?: number[];
  /** 1-based policy calls whose output is malformed. */
  malformedPolicyCalls?: number[];
  /** The user's message for each reply call (1-based), `user reply N` otherwise. */
  replyText?: (n: number) => string;
}

/** Deterministic stand-ins for the three LLM calls, with a log of every call made. */
export function fakeDialogueCalls(script: FakeCallScript = {}): DialogueCalls & { log: FakeCallLog[] } {
  const log: FakeCallLog[] = [];
  let policyCalls = 0;
  let analyses = 0;
  let replies = 0;
  return {
    log,
    async generatePolicyTurn(input: PolicyTurnInput) {
      log.push({ role: 'policy', seed: input.seed, messages: input.messages });
      const n = ++policyCalls;
      const malformed = script.malformedPolicyCalls?.includes(n) ?? false;
      return {
        raw: `assistant reply ${n}`,
        reply: malformed ? '' : `assistant reply ${n}`,
        thinking: null,
        malformed,
        ...(malformed ? { problem: 'no reply' } : {}),
        model: input.endpoint.model,
        latencyMs: 5,
        usage: { prompt: 100, completion: 10 },
      };
    },
    async analyzeAssistantReply(input: SimulatorCallInput) {
      log.push({ role: 'analysis', seed: input.seed, messages: input.messages });
      const change = script.changes?.[analyses++] ?? 0;
      return {
        analysis: { assistantIntent: 'comfort', goalFit: 'fits', innerThoughts: 'hm', emotionChange: change },
        raw: `{"emotionChange": ${change}}`,
        attempts: 1,
        latencyMs: 7,
        usage: { prompt: 200, completion: 20 },
      };
    },
    async writeUserMessage(input: SimulatorCallInput) {
      log.push({ role: 'reply', seed: input.seed, messages: input.messages });
      const n = ++replies;
      return { text: script.replyText?.(n) ?? `user reply ${n}`, latencyMs: 3, usage: { prompt: 300, completion: 30 } };
    },
  };
}
