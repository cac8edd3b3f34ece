import { EVALUATIONS_PREFIX, evaluationKey, isEvaluationKey, runMetricsKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import {
  completeEvaluationReport,
  type EvaluationReport,
  type StoredEvaluationReport,
} from '../core/evaluationReport.js';
import { parseStepRecords, type StepMetricsRecord } from '../core/runMetrics.js';
import type { Transcript } from '../core/transcript.js';

export interface LoadedEvaluation {
  report: EvaluationReport;
  transcripts: Map<string, Transcript>;
  notes: string[];
}

export interface LoadedRun {
  run: string;
  steps: StepMetricsRecord[];
  evaluations: EvaluationReport[];
  notes: string[];
}

async function exists(store: ArtifactStore, key: string): Promise<boolean> {
  const dir = key.slice(0, key.lastIndexOf('/'));
  return (await store.list(dir)).includes(key);
}

/** Maps with bounded concurrency, keeping the order of `items`. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Text of an artifact; a missing one is an error naming the key. */
export async function readArtifactText(store: ArtifactStore, key: string): Promise<string> {
  const text = await store.getText(key);
  if (text === null) throw new Error(`artifact ${key} not found (${store.locate(key)})`);
  return text;
}

function isEvaluation(value: unknown): value is StoredEvaluationReport {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'attune.evaluation' &&
    Array.isArray((value as { results?: unknown }).results)
  );
}

export async function loadEvaluation(store: ArtifactStore, evalId: string): Promise<LoadedEvaluation | null> {
  const key = evaluationKey(evalId);
  if (!(await exists(store, key))) return null;
  const stored = await store.getJson<unknown>(key);
  if (!isEvaluation(stored))
    throw new Error(`${store.locate(key)} is not an evaluation report (kind "attune.evaluation")`);
  const report = completeEvaluationReport(stored);
  const notes: string[] = [];
  const transcripts = new Map<string, Transcript>();
  const keys = [...new Set(report.results.flatMap((r) => (r.status === 'ok' ? [r.artifact] : [])))];
  await mapLimit(keys, 16, async (artifact) => {
    try {
      transcripts.set(artifact, await store.getJson<Transcript>(artifact));
    } catch (error) {
      notes.push(`transcript ${artifact} could not be read: ${(error as Error).message}`);
    }
  });
  return { report, transcripts, notes: notes.sort() };
}

/** Parses a run's metrics.jsonl; the notes name the artifact key. */
export function parseRunMetrics(text: string, run: string): { steps: StepMetricsRecord[]; notes: string[] } {
  return parseStepRecords(text, runMetricsKey(run));
}

/** Every stored evaluation whose runName is `run`. */
export async function evaluationsOfRun(
  store: ArtifactStore,
  run: string,
): Promise<{ evaluations: EvaluationReport[]; notes: string[] }> {
  const keys = (await store.list(EVALUATIONS_PREFIX)).filter(isEvaluationKey);
  const notes: string[] = [];
  const all = await mapLimit(keys, 16, async (key) => {
    try {
      const value = await store.getJson<unknown>(key);
      return isEvaluation(value) ? completeEvaluationReport(value) : null;
    } catch (error) {
      notes.push(`${key} could not be read: ${(error as Error).message}`);
      return null;
    }
  });
  const evaluations = all.filter((e): e is EvaluationReport => e !== null && e.runName === run);
  evaluations.sort((a, b) => (a.step ?? -1) - (b.step ?? -1) || a.createdAt.localeCompare(b.createdAt));
  return { evaluations, notes };
}

export async function loadRun(store: ArtifactStore, run: string): Promise<LoadedRun | null> {
  const key = runMetricsKey(run);
  const hasMetrics = await exists(store, key);
  const { evaluations, notes } = await evaluationsOfRun(store, run);
  if (!hasMetrics && evaluations.length === 0) return null;
  let steps: StepMetricsRecord[] = [];
  if (hasMetrics) {
    const parsed = parseRunMetrics(await readArtifactText(store, key), run);
    steps = parsed.steps;
    notes.push(...parsed.notes);
  } else {
    notes.push(`no step metrics yet (${key}); only the run's evaluations are shown`);
  }
  return { run, steps, evaluations, notes };
}
