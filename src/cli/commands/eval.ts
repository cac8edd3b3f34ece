import { EVALUATIONS_PREFIX, isEvaluationKey } from '../../artifacts/keys.js';
import type { ArtifactStore } from '../../artifacts/store.js';
import { MAX_EVALUATION_REPEATS } from '../../core/evaluationPlan.js';
import { nameProblem, namesClashingWith } from '../../core/names.js';
import { compareEvaluations } from '../../client/evaluationComparison.js';
import { loadEvaluationReport } from '../../client/evaluationReports.js';
import { finalEvaluationProgress, followEvaluation } from '../../client/evaluationProgress.js';
import { buildEvaluationInput, startOrAttachEvaluation } from '../../client/evaluations.js';
import type { EvaluationProgress, EvaluationSummary } from '../../workflows/evaluation.js';
import type { FrontendLink } from '../../client/frontendLink.js';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext, type CommandContext } from '../context.js';
import { evaluationProgressBar, evaluationProgressText, finishedDialogues } from '../render/evaluationProgress.js';
import { ProgressDisplay, RateEstimate } from '../render/progress.js';
import { renderEvaluationComparison } from '../render/evaluationComparison.js';
import { renderEvaluationTable } from '../render/evaluationTable.js';
import { withFollowerLink, withRuntime, workflowUiUrl } from '../runtime.js';
import { terminalSafe } from '../../core/terminalText.js';
import { SUITE_HELP, suiteCommand } from './evalSuite.js';

export const EVAL_FLAGS = {
  scenarios: { type: 'string', value: 'DIR', help: 'scenario directory' },
  split: { type: 'string', value: 'NAME', help: "eval (default) or train: the config's scenarios.<split>" },
  policy: {
    type: 'string',
    value: 'RUN@STEP',
    help: 'evaluate a trained version (served by the trainer or trainer.policyBaseURL);\ndefault: the configured policy endpoint',
  },
  name: { type: 'string', value: 'ID', help: 'evaluation id (default eval-<time>); reusing an id attaches to it' },
  only: { type: 'string', value: 'ID,...', help: 'only these scenarios' },
  repeats: {
    type: 'string',
    value: 'K',
    help: `K dialogues per scenario, each with its own simulator seed (1-${MAX_EVALUATION_REPEATS};\ndefault evaluation.repeats, 1)`,
  },
  json: { type: 'boolean', help: 'print one JSON object (score, success, failure, count, results, ...)' },
  suite: {
    type: 'string',
    value: 'math|code',
    help: 'capability retention instead of the Sentient benchmark: GSM8K or HumanEval\non the same policy; --only takes problem ids (see below)',
  },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

/** `eval compare A B` (its --json output is described in the help's compare paragraph). */
export const EVAL_COMPARE_FLAGS = {
  json: EVAL_FLAGS.json,
  'allow-different-environment': {
    type: 'boolean',
    help: 'compare evaluations whose protocol or simulator differ (refused otherwise); the differences are printed as warnings',
  },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const EVAL_HELP = `attune eval [--scenarios DIR | --split eval|train] [options]
attune eval --suite math|code [--policy RUN@STEP] [--only ID,...] [--json]
attune eval compare A B [--json]

Runs the Sentient benchmark as a Temporal workflow: one dialogue per scenario (bounded
concurrency), SAGE protocol by default (emotion 40, at most 10 turns, the scenario's first
message, simulator at temperature 0; see the evaluation.* config keys). Score = mean final
emotion; success = dialogues reaching 100; failure = ending below 10. A dialogue that fails to
run is reported and excluded from the score. Score, success and failure rates (overall and per
group) come with 95 % bootstrap confidence intervals (scenarios resampled with their repeats;
\`ci\`, \`intervals\` in --json), and the report stores a manifest: simulator endpoint, model and
difficulty (simulator.difficulty; absent = normal), prompt hash, protocol settings, seeds, Attune
version. While it runs, a progress bar of the dialogues (finished, failed, running, ETA) on a
terminal, a log line per change otherwise.
Held-out simulators (evaluation.simulators, e.g. --set 'evaluation.simulators=[{"name":"alt",
"baseURL":"http://127.0.0.1:8000/v1","model":"m"}]') play every dialogue again, same seeds: the
report's numbers stay the training simulator's, and \`simulators\` gives each simulator's score,
interval, environment and gap (training score minus its own).

${flagHelp(EVAL_FLAGS)}

${SUITE_HELP}

compare A B: the differences B - A between two evaluations (ids): aggregate, per scenario, and
the paired difference in final emotion over dialogues finished in both (same scenario and repeat)
with its 95 % confidence interval (bootstrap over scenarios) and a two-sided p-value (sign-flip
permutation test over scenarios, exact up to 16 scenarios), or "not significant". Two evaluations
whose environments differ in protocol, simulator (its difficulty included) or simulator prompts do
not measure the same thing: compare refuses them (exit 1), naming the fields (e.g.
simulator.difficulty), unless --allow-different-environment is given; it
then warns (stderr, and \`warnings\` in --json), as it does for any other manifest difference.
--json: difference, ci, pValue, significant, warnings, environmentDiffers, score, success, failure,
scenarios, dialogues.`;

function parseRepeats(text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isInteger(value) || value < 1 || value > MAX_EVALUATION_REPEATS)
    throw new UsageError(`--repeats "${text}": a whole number from 1 to ${MAX_EVALUATION_REPEATS}`);
  return value;
}

async function compareCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, EVAL_COMPARE_FLAGS);
  if (values.help) {
    process.stdout.write(`${EVAL_HELP}\n`);
    return 0;
  }
  const [a, b] = positionals;
  if (!a || !b) throw new UsageError('compare needs two evaluation ids: attune eval compare A B');
  const ctx = commandContext(values, 'eval');
  const comparison = compareEvaluations(
    await loadEvaluationReport(ctx.store, a),
    await loadEvaluationReport(ctx.store, b),
  );
  if (comparison.environmentDiffers.length > 0 && !values['allow-different-environment']) {
    const fields = comparison.environmentDiffers.join(', ');
    const details = comparison.warnings.filter((w) => comparison.environmentDiffers.some((f) => w.includes(` ${f} `)));
    process.stderr.write(
      `attune eval compare: ${a} and ${b} were measured in different environments (${fields}), so their scores do not compare:\n` +
        details.map((d) => `  ${terminalSafe(d)}\n`).join('') +
        'pass --allow-different-environment to compare them anyway\n',
    );
    return 1;
  }
  for (const warning of comparison.warnings) process.stderr.write(`warning: ${terminalSafe(warning)}\n`);
  process.stdout.write(
    values.json ? `${JSON.stringify(comparison)}\n` : `${terminalSafe(renderEvaluationComparison(comparison))}\n`,
  );
  return 0;
}

/** A new evaluation's name must be valid and must not share a report folder with an earlier one. */
async function checkEvaluationName(store: ArtifactStore, name: string): Promise<void> {
  const problem = nameProblem(name);
  if (problem !== null) throw new UsageError(`--name "${name}": ${problem}`);
  const earlier = (await store.list(EVALUATIONS_PREFIX)).filter(isEvaluationKey).map((key) => key.split('/')[1]!);
  const clashing = namesClashingWith(name, earlier);
  if (clashing.length > 0)
    throw new UsageError(
      `--name "${name}": evaluation "${clashing[0]}" already has that report folder (names differing only in case are one folder on some file systems); choose another name`,
    );
}

/** How often a followed evaluation is asked for its progress. */
const PROGRESS_POLL_MS = 1000;

/**
 * Follows the evaluation until it ends: a bar of its finished dialogues with an ETA on a terminal,
 * a log line whenever the counts change otherwise, and the final counts from its summary. A lost Temporal
 * frontend is waited out (the link reconnects).
 */
async function follow(ctx: CommandContext, evalId: string, link: FrontendLink): Promise<EvaluationSummary> {
  const run = followEvaluation(link, evalId, PROGRESS_POLL_MS);
  const display = new ProgressDisplay();
  const rate = new RateEstimate();
  let lastLine = '';
  const show = (p: EvaluationProgress): void => {
    rate.observe(Date.now(), finishedDialogues(p));
    if (display.isTerminal) {
      display.show(evaluationProgressBar(evalId, p, rate.etaMs(p.total)));
      return;
    }
    const line = evaluationProgressText(p);
    if (line !== lastLine) ctx.log.info(line, { evalId, ...p });
    lastLine = line;
  };
  try {
    for await (const p of run.statuses) show(p);
    const summary = await run.result;
    show(finalEvaluationProgress(summary));
    return summary;
  } finally {
    display.done();
  }
}

export async function evalCommand(argv: string[]): Promise<number> {
  if (argv[0] === 'compare') return compareCommand(argv.slice(1));
  const { values } = parseCommand(argv, EVAL_FLAGS, false);
  if (values.help) {
    process.stdout.write(`${EVAL_HELP}\n`);
    return 0;
  }
  if (values.suite !== undefined) return suiteCommand({ ...values, suite: values.suite });
  if (values.scenarios && values.split) throw new UsageError('give --scenarios or --split, not both');
  if (values.split && values.split !== 'eval' && values.split !== 'train')
    throw new UsageError('--split must be eval or train');
  const repeats = values.repeats !== undefined ? parseRepeats(values.repeats) : undefined;
  const ctx = commandContext(values, 'eval');
  if (values.name) await checkEvaluationName(ctx.store, values.name);
  const input = buildEvaluationInput(ctx.config, {
    ...(values.scenarios ? { scenarios: values.scenarios } : {}),
    ...(values.split ? { split: values.split as 'eval' | 'train' } : {}),
    ...(values.policy ? { policy: values.policy } : {}),
    ...(values.name ? { evalId: values.name } : {}),
    ...(repeats !== undefined ? { repeats } : {}),
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
    const { attached } = await startOrAttachEvaluation(temporal.client, ctx.config, input);
    if (attached) ctx.log.info('evaluation already exists: attaching', { evalId: input.evalId });
    ctx.log.info('evaluation started', {
      evalId: input.evalId,
      scenarios: input.scenarios.length,
      repeats: input.repeats ?? 1,
      policy: input.settings.policy.model,
      ui: workflowUiUrl(temporal, input.evalId),
    });
    const summary = await withFollowerLink(ctx, temporal, (link) => follow(ctx, input.evalId, link));
    const report = await loadEvaluationReport(ctx.store, summary.evalId);
    if (values.json) process.stdout.write(`${JSON.stringify(report)}\n`);
    else
      process.stdout.write(
        `${terminalSafe(renderEvaluationTable(report))}\nReport data: ${ctx.store.locate(summary.artifact)}\nHTML report: attune report ${summary.evalId}\n`,
      );
    return 0;
  });
}
