import { SIMULATOR_DIFFICULTIES, type SimulatorDifficulty } from '../difficulty.js';
import type { Scenario } from '../scenario.js';
import type { ChatMessage } from '../transcript.js';
import { stableHash } from '../seeds.js';
import { analysisMessages, openingMessages, replyMessages } from './simulator.js';

/** A fixed scenario and dialogue every template is rendered with; the hash changes with any template text. */
function probeScenario(language: Scenario['language']): Scenario {
  return {
    id: 'prompt-hash-probe',
    language,
    persona: { name: 'P', age: 30, occupation: 'O', habits: 'H', speakingStyle: 'S' },
    background: 'B',
    goal: 'G',
    hiddenIntention: 'I',
    personality: 'negative',
    traits: ['T'],
    goalType: 'venting',
    firstMessage: 'F',
    reactions: { highEmotion: 'RH', mediumEmotion: 'RM', lowEmotion: 'RL', onTarget: 'RO', offTarget: 'RF' },
  };
}

const HISTORY: ChatMessage[] = [
  { role: 'user', content: 'U1' },
  { role: 'assistant', content: 'A1' },
];
const ANALYSIS = { assistantIntent: 'AI', goalFit: 'GF', innerThoughts: 'IT', emotionChange: 3 };

/**
 * Fingerprint of the simulated user's prompts (analysis, reply, opening; English and Chinese; at
 * every emotion band and with and without the closing instruction) at the given difficulty levels
 * (default: `normal`, whose hash is the one evaluations recorded before levels existed), as 8 hex
 * digits. Two evaluations with different hashes were judged by different instructions.
 */
export function simulatorPromptHash(levels: readonly SimulatorDifficulty[] = ['normal']): string {
  const rendered: ChatMessage[][] = [];
  for (const difficulty of SIMULATOR_DIFFICULTIES.filter((level) => levels.includes(level))) {
    for (const language of ['en', 'zh'] as const) {
      const s = probeScenario(language);
      for (const emotion of [5, 40, 70, 95]) {
        rendered.push(analysisMessages(s, HISTORY, 'A2', emotion, difficulty));
        rendered.push(replyMessages(s, HISTORY, ANALYSIS, emotion, false, difficulty));
        rendered.push(replyMessages(s, HISTORY, ANALYSIS, emotion, true, difficulty));
        rendered.push(openingMessages(s, emotion));
      }
    }
  }
  return stableHash(JSON.stringify(rendered)).toString(16).padStart(8, '0');
}
