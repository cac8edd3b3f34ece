import type { Client } from '@temporalio/client';
import { runMetricsKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import { offPolicyFigures, type OffPolicyFigures } from '../core/offPolicyFigures.js';
import type { EvaluationRow, RunRow } from '../core/runListing.js';
import { latestPublishedVersion, parseStepRecords, type StepMetricsRecord } from '../core/runMetrics.js';
import { findRun, listEvaluations } from './runListing.js';

/**
 * One step as `attune runs show` lists it: the version its dialogues sampled from, what they scored,
 * and the off-policy figures (null in records of trainers that did not report them).
 */
export interface RunDetailStep extends OffPolicyFigures {
  step: number;
  sampledFrom: string;
  rewardMean: number;
  successRate: number;
  evalScore: number | null;
  /** The publish's start to the new version's first served token, ms (null: not measured, see StepMetricsRecord). */
  publishLatencyMs: number | null;
  /** The trainer's commit to its answer, ms (null: not reported, see StepMetricsRecord). */
  commitToAnswerMs: number | null;
}

export interface RunDetail {
  run: RunRow;
  /** The newest version the run published (`NAME@STEP`), null before its first step. */
  latestVersion: string | null;
  steps: RunDetailStep[];
  evaluations: EvaluationRow[];
  notes: string[];
}

export function runDetailStep(s: StepMetricsRecord): RunDetailStep {
  return {
    step: s.step,
    sampledFrom: s.policyVersion,
    rewardMean: s.reward.mean,
    successRate: s.successRate,
    evalScore: s.eval?.score ?? null,
    publishLatencyMs: s.publishLatencyMs ?? null,
    commitToAnswerMs: s.commitToAnswerMs ?? null,
    ...offPolicyFigures(s.trainer),
  };
}

/** `attune runs show`: the run's listing row, its step metrics and its evaluations; null for an unknown run. */
export async function runDetail(client: Client, store: ArtifactStore, name: string): Promise<RunDetail | null> {
  const run = await findRun(client, name);
  if (run === null) return null;
  const { steps, notes } = parseStepRecords((await store.getText(runMetricsKey(name))) ?? '', runMetricsKey(name));
  return {
    run,
    latestVersion: latestPublishedVersion(name, steps),
    steps: steps.map(runDetailStep),
    evaluations: await listEvaluations(client, name),
    notes,
  };
}
