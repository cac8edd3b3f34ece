import type { EvaluationReport } from '../../core/evaluationReport.js';
import { evaluationKey } from '../../artifacts/keys.js';
import { buildEvaluationInput, startEvaluation } from '../../client/evaluations.js';
import type { EvaluationSummary } from '../../workflows/evaluation.js';
import { CONFIG_HELP, CONFIG_OPTIONS, parseCommand, UsageError } from '../args.js';
import { commandContext, type CommandContext } from '../context.js';
import { renderEvaluationTable } from '../render/evaluationTable.js';
import { withRuntime, workflowUiUrl } from '../runtime.js';

export const EVAL_HELP = `attune eval [--scenarios DIR | --split eval|train] [options]
attune eval compare A B [--json]

Runs the Sentient benchmark as a Temporal workflow: one dialogue per scenario (bounded
concurrency), SAGE protocol by default (emotion 40, at most 10 turns, the scenario's first
message, simulator at temperature 0; see the evaluation.* config keys). Score = mean final
emotion; success = dialogues reaching 100; failure = ending below 10. A dialogue that fails to
run is reported and excluded from the score.

      --scenarios DIR   scenario directory
      --split NAME      eval (default) or train: the config's scenarios.<split>
      --policy RUN@STEP evaluate a trained version (served by the trainer or trainer.policyBaseURL);
                        default: the configured policy endpoint
      --name ID         evaluation id (default eval-<time>); reusing an id attaches to it
      --only ID,...     only these scenarios
      --json            print one JSON object (score, success, failure, count, results, ...)
${CONFIG_HELP}

compare A B: per-scenario and aggregate differences between two evaluations (ids).`;

const OPTIONS = {
  ...CONFIG_OPTIONS,
  scenarios: { type: 'string' },
  split: { type: 'string' },
  policy: { type: 'string' },
  name: { type: 'string' },
  only: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export async function loadEvaluation(ctx: CommandContext, evalId: string): Promise<EvaluationReport> {
  return ctx.store.getJson<EvaluationReport>(evaluationKey(evalId));
}

export interface EvaluationComparison {
  a: string;
  b: string;
  score: { a: number; b: number; delta: number };
  success: { a: number; b: number; delta: number };
  failure: { a: number; b: number; delta: number };
  scenarios: { id: string; a: number | null; b: number | null; delta: number | null }[];
}

export function compareEvaluations(a: EvaluationReport, b: EvaluationReport): EvaluationComparison {
  const finals = (r: EvaluationReport) =>
    new Map(r.results.map((e) => [e.scenarioId, e.status === 'ok' ? e.finalEmotion : null]));
  const fa = finals(a);
  const fb = finals(b);
  const ids = [...new Set([...fa.keys(), ...fb.keys()])].sort();
  const d = (x: number, y: number) => Math.round((y - x) * 100) / 100;
  return {
    a: a.evalId,
    b: b.evalId,
    score: { a: a.score, b: b.score, delta: d(a.score, b.score) },
    success: { a: a.success, b: b.success, delta: b.success - a.success },
    failure: { a: a.failure, b: b.failure, delta: b.failure - a.failure },
    scenarios: ids.map((id) => {
      const x = fa.get(id) ?? null;
      const y = fb.get(id) ?? null;
      return { id, a: x, b: y, delta: x !== null && y !== null ? y - x : null };
    }),
  };
}

function renderComparison(c: EvaluationComparison): string {
  const sign = (n: number) => (n > 0 ? `+${n}` : `${n}`);
  const width = Math.max(8, ...c.scenarios.map((s) => s.id.length));
  const lines = [
    `A = ${c.a}`,
    `B = ${c.b}`,
    '',
    `${'metric'.padEnd(width)}  ${'A'.padStart(7)}  ${'B'.padStart(7)}  ${'B-A'.padStart(7)}`,
    `${'score'.padEnd(width)}  ${String(c.score.a).padStart(7)}  ${String(c.score.b).padStart(7)}  ${sign(c.score.delta).padStart(7)}`,
    `${'success'.padEnd(width)}  ${String(c.success.a).padStart(7)}  ${String(c.success.b).padStart(7)}  ${sign(c.success.delta).padStart(7)}`,
    `${'failure'.padEnd(width)}  ${String(c.failure.a).padStart(7)}  ${String(c.failure.b).padStart(7)}  ${sign(c.failure.delta).padStart(7)}`,
    '',
    ...c.scenarios.map(
      (s) =>
        `${s.id.padEnd(width)}  ${String(s.a ?? 'failed').padStart(7)}  ${String(s.b ?? 'failed').padStart(7)}  ${(s.delta === null ? '-' : sign(s.delta)).padStart(7)}`,
    ),
  ];
  return lines.join('\n');
}

async function compareCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, { ...CONFIG_OPTIONS, json: { type: 'boolean' } });
  if (values.help) {
    process.stdout.write(`${EVAL_HELP}\n`);
    return 0;
  }
  const [a, b] = positionals;
  if (!a || !b) throw new UsageError('compare needs two evaluation ids: attune eval compare A B');
  const ctx = commandContext(values, 'eval');
  const comparison = compareEvaluations(await loadEvaluation(ctx, a), await loadEvaluation(ctx, b));
  process.stdout.write(values.json ? `${JSON.stringify(comparison)}\n` : `${renderComparison(comparison)}\n`);
  return 0;
}

export async function evalCommand(argv: string[]): Promise<number> {
  if (argv[0] === 'compare') return compareCommand(argv.slice(1));
  const { values } = parseCommand(argv, OPTIONS, false);
  if (values.help) {
    process.stdout.write(`${EVAL_HELP}\n`);
    return 0;
  }
  if (values.scenarios && values.split) throw new UsageError('give --scenarios or --split, not both');
  if (values.split && values.split !== 'eval' && values.split !== 'train')
    throw new UsageError('--split must be eval or train');
  const ctx = commandContext(values, 'eval');
  const input = buildEvaluationInput(ctx.config, {
    ...(values.scenarios ? { scenarios: values.scenarios } : {}),
    ...(values.split ? { split: values.split as 'eval' | 'train' } : {}),
    ...(values.policy ? { policy: values.policy } : {}),
    ...(values.name ? { evalId: values.name } : {}),
    ...(values.only
      ? {
          only: values.only
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        }
      : {}),
  });
  return withRuntime(ctx, async (temporal) => {
    let handle;
    try {
      handle = await startEvaluation(temporal.client, ctx.config, input);
    } catch (error) {
      if ((error as Error).name !== 'WorkflowExecutionAlreadyStartedError') throw error;
      ctx.log.info('evaluation already exists: attaching', { evalId: input.evalId });
      handle = temporal.client.workflow.getHandle(input.evalId);
    }
    ctx.log.info('evaluation started', {
      evalId: input.evalId,
      scenarios: input.scenarios.length,
      policy: input.settings.policy.model,
      ui: workflowUiUrl(temporal, input.evalId),
    });
    const summary = (await handle.result()) as EvaluationSummary;
    const report = await loadEvaluation(ctx, summary.evalId);
    if (values.json) process.stdout.write(`${JSON.stringify(report)}\n`);
    else
      process.stdout.write(
        `${renderEvaluationTable(report)}\nReport data: ${ctx.store.locate(summary.artifact)}\nHTML report: attune report ${summary.evalId}\n`,
      );
    return 0;
  });
}
