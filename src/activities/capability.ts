import { ApplicationFailure } from '@temporalio/common';
import { capabilityProblemKey, capabilityReportKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import {
  problemMessages,
  type CapabilityProblem,
  type CapabilitySuite,
  type CodeProblem,
  type MathProblem,
} from '../core/capability/capabilitySuites.js';
import {
  capabilityReport,
  capabilityReportSchema,
  capabilitySummary,
  type CapabilityEvaluationInput,
  type CapabilityProblemEntry,
  type CapabilitySummary,
} from '../core/capability/capabilityReport.js';
import { assembleProgram } from '../core/capability/codeProgram.js';
import { scoreMathAnswer } from '../core/capability/mathAnswer.js';
import type { ChatMessage } from '../core/transcript.js';
import {
  runUntrustedPython,
  SandboxUnavailableError,
  type UntrustedPythonResult,
} from '../sandbox/runUntrustedPython.js';
import { DatasetMismatchError, loadCapabilityDataset } from '../scenarios/capabilityDatasets.js';

/** One problem of a run's data set: the file and hash the run recorded, and the problem's id. */
export interface ProblemRef {
  suite: CapabilitySuite;
  file: string;
  sha256: string;
  problemId: string;
}

/** The policy's answer to a problem, to be scored. */
export interface ProblemAnswer extends ProblemRef {
  evalId: string;
  /** The reply as scored (think block stripped), and the completion as the endpoint sent it. */
  reply: string;
  raw: string;
  sandboxTimeoutMs: number;
}

export interface ProblemScore {
  solved: boolean;
  outcome: string;
  detail: string;
  /** The problem's record in the artifact store. */
  artifact: string;
  /** Code: every confinement the sandbox applied to the program. */
  confinement: string[];
}

function problemOf(ref: ProblemRef): CapabilityProblem {
  let problems: Map<string, CapabilityProblem>;
  try {
    ({ problems } = loadCapabilityDataset(ref.suite, ref.file, ref.sha256));
  } catch (error) {
    if (error instanceof DatasetMismatchError)
      throw ApplicationFailure.nonRetryable(error.message, 'CapabilityDatasetMismatch');
    throw error;
  }
  const problem = problems.get(ref.problemId);
  if (!problem)
    throw ApplicationFailure.nonRetryable(`no problem "${ref.problemId}" in ${ref.file}`, 'CapabilityDatasetMismatch');
  return problem;
}

/**
 * Model-written programs run one at a time in a worker process: parallel runs share the sandbox
 * user's process limit, so one fork bomb could fail another problem's program (docs/sandbox.md).
 */
let sandboxTail: Promise<unknown> = Promise.resolve();
function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
  const run = sandboxTail.then(work, work);
  sandboxTail = run.catch(() => undefined);
  return run;
}

function clip(text: string, max = 300): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

function codeDetail(result: UntrustedPythonResult, timeoutMs: number): string {
  switch (result.outcome) {
    case 'passed':
      return 'passed';
    case 'failed': {
      const lastLine = result.stderrTail.trim().split('\n').pop() ?? '';
      return clip(`failed (exit ${result.exitCode}): ${lastLine || 'no message'}`);
    }
    case 'timeout':
      return `timeout: still running at ${timeoutMs} ms`;
    case 'killed':
      return `killed by ${result.signal ?? 'a signal'}`;
    default:
      return clip(`sandbox-error: ${result.sandboxError ?? 'unknown'}`);
  }
}

async function runCode(problem: CodeProblem, answer: ProblemAnswer) {
  const program = assembleProgram(problem, answer.reply);
  let result: UntrustedPythonResult;
  try {
    result = await oneAtATime(() => runUntrustedPython({ program, timeoutMs: answer.sandboxTimeoutMs }));
  } catch (error) {
    // The host cannot confine model-written code: no problem of this worker can be scored.
    if (error instanceof SandboxUnavailableError)
      throw ApplicationFailure.nonRetryable(error.message, 'SandboxUnavailable');
    throw error;
  }
  const verdict = {
    solved: result.outcome === 'passed',
    outcome: result.outcome,
    detail: codeDetail(result, answer.sandboxTimeoutMs),
  };
  return { verdict, record: { program, run: result }, confinement: result.confinement };
}

function scoreMath(problem: MathProblem, answer: ProblemAnswer) {
  const { solved, outcome, extracted } = scoreMathAnswer(answer.reply, problem.answer);
  const detail = extracted
    ? `answer ${extracted.value} (${extracted.rule})${solved ? '' : `, expected ${problem.answer}`}`
    : `no number in the reply, expected ${problem.answer}`;
  return { verdict: { solved, outcome, detail }, record: { expected: problem.answer, extracted }, confinement: [] };
}

export function createCapabilityActivities(store: ArtifactStore) {
  return {
    /** The messages a problem is asked with. */
    async capabilityPrompt(ref: ProblemRef): Promise<ChatMessage[]> {
      return problemMessages(problemOf(ref));
    },
    /**
     * Scores one answer (maths: exact match of the final answer; code: the problem's tests, run in the
     * sandbox) and writes the problem's record. Safe to run twice: the record is keyed by problem.
     */
    async scoreCapabilityAnswer(answer: ProblemAnswer): Promise<ProblemScore> {
      const problem = problemOf(answer);
      const scored = problem.suite === 'math' ? scoreMath(problem, answer) : await runCode(problem, answer);
      const artifact = await store.putJson(capabilityProblemKey(answer.evalId, answer.problemId), {
        evalId: answer.evalId,
        suite: answer.suite,
        problemId: answer.problemId,
        messages: problemMessages(problem),
        raw: answer.raw,
        reply: answer.reply,
        ...scored.verdict,
        ...scored.record,
      });
      return { ...scored.verdict, artifact, confinement: scored.confinement };
    },
    /** Idempotent: keyed by the evaluation id. */
    /** Builds the suite run's report from its problems, stores it, and returns its headline. */
    async saveCapabilityReport(made: {
      input: CapabilityEvaluationInput;
      problems: CapabilityProblemEntry[];
      createdAt: string;
      confinement: string[];
    }): Promise<CapabilitySummary> {
      const report = capabilityReport(made.input, made.problems, made.createdAt, made.confinement);
      const artifact = await store.putJson(capabilityReportKey(report.evalId), capabilityReportSchema.parse(report));
      return capabilitySummary(report, artifact);
    },
  };
}
