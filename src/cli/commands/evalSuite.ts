import {
  buildCapabilityInput,
  followCapabilityEvaluation,
  loadCapabilityReport,
  startOrAttachCapabilityEvaluation,
} from '../../client/capabilityEvaluations.js';
import type { FrontendLink } from '../../client/frontendLink.js';
import { CAPABILITY_SUITES, type CapabilitySuite } from '../../core/capability/capabilitySuites.js';
import type { CapabilitySummary } from '../../core/capability/capabilityReport.js';
import { terminalSafe } from '../../core/terminalText.js';
import type { EvaluationProgress } from '../../workflows/evaluation.js';
import { UsageError } from '../args.js';
import { commandContext, type CommandContext } from '../context.js';
import { evaluationProgressText, finishedDialogues } from '../render/evaluationProgress.js';
import { formatProgress, ProgressDisplay, RateEstimate } from '../render/progress.js';
import { renderCapabilityTable } from '../render/capabilityTable.js';
import { withFollowerLink, withRuntime, workflowUiUrl } from '../runtime.js';

/** The flags `attune eval --suite` reads (the others of `eval` are the Sentient benchmark's). */
export interface SuiteFlags {
  suite: string;
  policy?: string | undefined;
  name?: string | undefined;
  only?: string | undefined;
  json?: boolean | undefined;
  config?: string | undefined;
  set?: string[] | undefined;
  scenarios?: string | undefined;
  split?: string | undefined;
  repeats?: string | undefined;
}

export const SUITE_HELP = `--suite math|code: capability retention instead of the Sentient benchmark, on the same
policy (the configured one, or --policy RUN@STEP). math: GSM8K, exact match of the final number;
code: HumanEval, the problem's unit tests run in the sandbox (docs/sandbox.md). One greedy answer
per problem (temperature 0, 512 tokens); the score is the share solved with a 95 % Wilson interval.
The report (evaluations/<name>/capability.json) stores the environment: data set and its SHA-256,
prompt template and hash, decoding, policy model and version. --only takes problem ids (e.g.
HumanEval/0); --json prints the report (score, ci, solved, count, failed, environment, problems).`;

export function suiteOf(text: string): CapabilitySuite {
  if (!(CAPABILITY_SUITES as readonly string[]).includes(text))
    throw new UsageError(`--suite "${text}": one of ${CAPABILITY_SUITES.join(', ')}`);
  return text as CapabilitySuite;
}

const PROGRESS_POLL_MS = 1000;

/** Follows the run until it ends: a bar of finished problems on a terminal, a log line per change otherwise. */
async function follow(ctx: CommandContext, evalId: string, link: FrontendLink): Promise<CapabilitySummary> {
  const run = followCapabilityEvaluation(link, evalId, PROGRESS_POLL_MS);
  const display = new ProgressDisplay();
  const rate = new RateEstimate();
  let lastLine = '';
  const show = (p: EvaluationProgress): void => {
    rate.observe(Date.now(), finishedDialogues(p));
    const etaMs = rate.etaMs(p.total);
    const detail = `${p.failed > 0 ? `${p.failed} failed, ` : ''}${p.inFlight} running`;
    if (display.isTerminal) {
      display.show(
        formatProgress({ label: evalId, done: finishedDialogues(p), total: p.total, unit: 'problems', etaMs, detail }),
      );
      return;
    }
    const line = evaluationProgressText(p).replace(/^dialogues/, 'problems');
    if (line !== lastLine) ctx.log.info(line, { evalId, ...p });
    lastLine = line;
  };
  try {
    for await (const p of run.statuses) show(p);
    return await run.result;
  } finally {
    display.done();
  }
}

/** `attune eval --suite math|code`: one capability suite on the evaluation's policy. */
export async function suiteCommand(values: SuiteFlags): Promise<number> {
  const suite = suiteOf(values.suite);
  if (values.scenarios || values.split || values.repeats)
    throw new UsageError("--scenarios, --split and --repeats are the Sentient benchmark's: not with --suite");
  const ctx = commandContext(values, 'eval');
  const only = values.only
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const input = buildCapabilityInput(ctx.config, {
    suite,
    ...(values.policy ? { policy: values.policy } : {}),
    ...(values.name ? { evalId: values.name } : {}),
    ...(only && only.length > 0 ? { only } : {}),
  });
  return withRuntime(ctx, async (temporal) => {
    const { attached } = await startOrAttachCapabilityEvaluation(temporal.client, ctx.config, input);
    if (attached) ctx.log.info('suite run already exists: attaching', { evalId: input.evalId });
    ctx.log.info('suite run started', {
      evalId: input.evalId,
      suite,
      problems: input.problemIds.length,
      policy: input.settings.policy.model,
      ui: workflowUiUrl(temporal, input.evalId),
    });
    const summary = await withFollowerLink(ctx, temporal, (link) => follow(ctx, input.evalId, link));
    if (summary.suite !== suite) throw new UsageError(`"${input.evalId}" is a ${summary.suite} run, not ${suite}`);
    const report = await loadCapabilityReport(ctx.store, summary.evalId);
    if (values.json) process.stdout.write(`${JSON.stringify(report)}\n`);
    else
      process.stdout.write(
        `${terminalSafe(renderCapabilityTable(report))}\nReport data: ${ctx.store.locate(summary.artifact)}\n`,
      );
    return 0;
  });
}
