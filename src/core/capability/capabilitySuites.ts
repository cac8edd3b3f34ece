import { z } from 'zod';
import { stableHash } from '../seeds.js';
import type { ChatMessage } from '../transcript.js';

/**
 * Capability retention: does a policy trained for empathy keep its maths and its coding? Each suite
 * asks the policy one question per problem and scores the answer mechanically.
 */
export const CAPABILITY_SUITES = ['math', 'code'] as const;
export type CapabilitySuite = (typeof CAPABILITY_SUITES)[number];

/** A maths problem (GSM8K): a word problem and its final answer, a number. */
export interface MathProblem {
  suite: 'math';
  id: string;
  question: string;
  answer: string;
}

/** A code problem (HumanEval): a function's signature and docstring, and the tests its body must pass. */
export interface CodeProblem {
  suite: 'code';
  id: string;
  prompt: string;
  entryPoint: string;
  test: string;
}

export type CapabilityProblem = MathProblem | CodeProblem;

/** A vendored data set, as a suite run names it: its file under evals/data, and what it holds. */
export const capabilityDatasetSchema = z.strictObject({
  name: z.string().min(1),
  /** A plain file name: the worker resolves it inside its own data directory. */
  file: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a file name without a directory'),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'a hex SHA-256'),
  source: z.string().min(1),
  license: z.string().min(1),
  /** Problems in the file (a run may take fewer: `problemIds`). */
  problems: z.number().int().positive(),
});
export type CapabilityDataset = z.infer<typeof capabilityDatasetSchema>;

/** Sampling of the policy's answers: greedy, so a score is the policy's, not a draw's. */
export const decodingSchema = z.strictObject({
  temperature: z.number().min(0).max(2),
  maxTokens: z.number().int().positive(),
});
export type Decoding = z.infer<typeof decodingSchema>;

export const DEFAULT_DECODING: Record<CapabilitySuite, Decoding> = {
  math: { temperature: 0, maxTokens: 512 },
  code: { temperature: 0, maxTokens: 512 },
};

/** Each program's wall-clock deadline in the sandbox; its other limits are the sandbox's defaults. */
export const DEFAULT_SANDBOX_TIMEOUT_MS = 10_000;

/**
 * The one user message each problem is asked with. Zero-shot, so that the score does not depend on
 * a few-shot prefix; the maths answer is asked for in GSM8K's own `#### N` form.
 */
export const PROMPT_TEMPLATES: Record<CapabilitySuite, string> = {
  math:
    'Solve this maths problem. Reason step by step, then write the final answer alone on the last line, ' +
    'as "#### <number>".\n\n{question}',
  code:
    'Complete this Python function. Reply with the whole function, with the imports it needs, in one ' +
    '```python code block.\n\n```python\n{prompt}```',
};

/** Fingerprint of a suite's prompt template, stored with every score. */
export function promptHash(suite: CapabilitySuite): string {
  return stableHash(PROMPT_TEMPLATES[suite]).toString(16).padStart(8, '0');
}

export function problemMessages(problem: CapabilityProblem): ChatMessage[] {
  const template = PROMPT_TEMPLATES[problem.suite];
  // A function replacer: `$` in a problem's text is text, not a replacement pattern.
  const content =
    problem.suite === 'math'
      ? template.replace('{question}', () => problem.question)
      : template.replace('{prompt}', () => problem.prompt);
  return [{ role: 'user', content }];
}

export { problemSeed } from './problemSeed.js';
