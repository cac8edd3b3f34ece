import { runMetricsKey } from '../../artifacts/keys.js';
import { isValidName, NAME_RULE } from '../../core/names.js';
import type { FrontendLink } from '../../client/frontendLink.js';
import { followTraining } from '../../client/trainingProgress.js';
import { startOrAttachTraining } from '../../client/trainingRuns.js';
import { trainingWorkflowId, type TrainingResult } from '../../workflows/training.js';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext, type CommandContext } from '../context.js';
import { withFollowerLink, withRuntime, workflowUiUrl } from '../runtime.js';
import { formatProgress, ProgressDisplay, RateEstimate } from '../render/progress.js';

export const TRAIN_FLAGS = {
  name: {
    type: 'string',
    short: 'n',
    value: 'NAME',
    help: "run name (default <algorithm>-<time>); also the trainer's run id",
  },
  detach: { type: 'boolean', help: 'start (or attach) and return at once' },
  continue: {
    type: 'boolean',
    help: "continue an ended run (failed, terminated, stopped, or completed with fewer\nsteps than training.steps now asks for) from the trainer's applied step + 1",
  },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const TRAIN_HELP = `attune train --config FILE [--name NAME] [--set key=value] [--detach] [--continue]

Starts an RLVER training run as a durable Temporal workflow and follows it until it ends. Each
step: scenarios chosen from (seed, step), dialogues as child workflows, one optimizer step on the
trainer (exactly once), new weights published, metrics appended to
$ATTUNE_HOME/artifacts/runs/NAME/metrics.jsonl. A run whose name exists is never started again:
a running one is attached to, a completed one is shown. Operate it with attune
status|pause|resume|stop|set NAME.

${flagHelp(TRAIN_FLAGS)}`;

/**
 * Follows the run until it ends: a progress bar of the step's dialogues on a terminal, a log line
 * whenever the progress changes otherwise. The ETA is the run's (from finished steps) once it has
 * one, before that the step's, from the rate its dialogues finish at. A lost Temporal frontend is
 * waited out (the link reconnects); the display goes on once it answers again.
 */
async function follow(ctx: CommandContext, link: FrontendLink, runName: string): Promise<TrainingResult> {
  const run = followTraining(link, runName, 2000);
  const display = new ProgressDisplay();
  const rate = new RateEstimate();
  let lastStep = 0;
  let lastLine = '';
  try {
    for await (const s of run.statuses) {
      if (s.step !== lastStep) rate.reset();
      lastStep = s.step;
      rate.observe(Date.now(), s.rollouts.done);
      if (display.isTerminal) {
        const detail = [
          s.phase,
          ...(s.rollouts.failed > 0 ? [`${s.rollouts.failed} failed`] : []),
          ...(s.lastMetrics ? [`last reward ${s.lastMetrics.reward.mean.toFixed(3)}`] : []),
        ].join(', ');
        display.show(
          formatProgress({
            label: `step ${Math.min(s.step, s.steps)}/${s.steps}`,
            done: s.rollouts.done,
            total: s.rollouts.total,
            unit: 'dialogues',
            etaMs: s.etaMs ?? rate.etaMs(s.rollouts.total),
            detail,
          }),
        );
      } else {
        const line = `step ${Math.min(s.step, s.steps)}/${s.steps} ${s.phase}: rollouts ${s.rollouts.done}/${s.rollouts.total} (${s.rollouts.failed} failed)${s.lastMetrics ? `; last reward ${s.lastMetrics.reward.mean.toFixed(3)}` : ''}`;
        if (line !== lastLine) ctx.log.info(line, { run: runName, step: s.step, phase: s.phase, etaMs: s.etaMs });
        lastLine = line;
      }
    }
  } finally {
    display.done();
  }
  return run.result;
}

export async function trainCommand(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, TRAIN_FLAGS, false);
  if (values.help) {
    process.stdout.write(`${TRAIN_HELP}\n`);
    return 0;
  }
  const ctx = commandContext(values, 'train');
  const runName =
    values.name ??
    `${ctx.config.training.algorithm}-${new Date().toISOString().replace(/[:.]/g, '-').replace(/Z$/, '')}`;
  if (!isValidName(runName)) throw new UsageError(`--name "${runName}": ${NAME_RULE}`);
  return withRuntime(
    ctx,
    async (temporal, runtime) => {
      const start = await startOrAttachTraining(temporal.client, ctx.config, runName, {
        continueRun: values.continue === true,
      });
      const where = {
        run: runName,
        workflowId: trainingWorkflowId(runName),
        ui: workflowUiUrl(temporal, trainingWorkflowId(runName)),
      };
      if (start.outcome === 'continued') ctx.log.info(`run continues from step ${start.fromStep}`, where);
      else if (start.outcome === 'finished') ctx.log.info('run already finished; nothing started', where);
      else ctx.log.info(start.outcome === 'attached' ? 'attached to existing run' : 'run started', where);
      if (start.outcome === 'finished' && start.note) ctx.log.warn(start.note, { run: runName });
      if (values.detach) {
        // Workers this command started stop with it: the run would wait with nobody to serve it.
        if (runtime.ownWorkers && start.outcome !== 'finished')
          ctx.log.warn(
            'no worker outside this command serves the run: it waits until `attune dev` or `attune worker --role all` runs (`attune status` names the queues)',
            { run: runName },
          );
        process.stdout.write(`${runName}\n`);
        return 0;
      }
      const result =
        start.outcome === 'finished'
          ? start.result
          : await withFollowerLink(ctx, temporal, (link) => follow(ctx, link, runName));
      process.stdout.write(
        `Run ${result.runName}: ${result.stepsApplied} step(s) applied${result.stopped ? ' (stopped by operator)' : ''}; final version ${result.version}\nMetrics: ${ctx.store.locate(runMetricsKey(runName))}\n`,
      );
      return 0;
    },
    { optimizer: true },
  );
}
