import { resolve } from 'node:path';
import { compareEvaluations } from '../../client/evaluationComparison.js';
import { loadEvaluationReport } from '../../client/evaluationReports.js';
import { buildEvaluationInput, startOrAttachEvaluation } from '../../client/evaluations.js';
import { followTraining } from '../../client/trainingProgress.js';
import { followEvaluation } from '../../client/evaluationProgress.js';
import { startOrAttachTraining } from '../../client/trainingRuns.js';
import { loadConfig } from '../../config/load.js';
import { REPO_ROOT } from '../../paths.js';
import { writeReport } from '../../report/index.js';
import { defaultReportDir } from '../../report/reportOutput.js';
import { trainingWorkflowId } from '../../workflows/training.js';
import { CONFIG_FLAGS, flagHelp, intOption, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext, type CommandContext } from '../context.js';
import type { TemporalHandle } from '../../temporal/connect.js';
import { withFollowerLink, withRuntime, workflowUiUrl } from '../runtime.js';

export const DEMO_FLAGS = {
  resume: { type: 'string', value: 'NAME', help: 'attach to an earlier demo run instead of starting a new one' },
  steps: { type: 'string', value: 'N', help: 'training steps (default from configs/demo.yaml)' },
  'scenarios-per-step': { type: 'string', value: 'N', help: 'scenarios per training step' },
  samples: { type: 'string', value: 'N', help: 'dialogues per scenario (GRPO group size)' },
  turns: { type: 'string', value: 'N', help: 'assistant turns per dialogue (training and evaluation)' },
  'eval-scenarios': {
    type: 'string',
    value: 'N',
    help: 'eval scenarios for the before/after evaluation (default 2)',
  },
  ...CONFIG_FLAGS,
  config: { ...CONFIG_FLAGS.config, help: 'config (default configs/demo.yaml)' },
} as const satisfies Flags;

export const DEMO_HELP = `attune demo [options]        (npm run demo)

Attune's main job on the embedded default, with real components only: the Temporal dev server
with its UI, the workers, the trainer on CPU and a local simulator model. Runs a short GRPO run
(configs/demo.yaml), evaluates the base and the final policy on a few eval scenarios, writes the
HTML report and prints the UI address, the run name and the report path. POLICY_* / SIMULATOR_* /
TRAINER_URL / TEMPORAL_ADDRESS point it at other endpoints: same pipeline, other settings.

${flagHelp(DEMO_FLAGS)}`;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/**
 * An external policy server (POLICY_BASE_URL, a vLLM) gets each step's LoRA adapter; without one
 * the trainer serves the policy. vLLM loads adapters only, so the demo then trains LoRA at the
 * server's rank limit (`policy.maxLoraRank`, vLLM's default 16) unless the config already sets
 * `training.lora`. Returned before the command's own `--set`s, which win.
 */
export function demoPublishing(configFile: string, set: string[], env: NodeJS.ProcessEnv = process.env): string[] {
  if (!env.POLICY_BASE_URL) return [];
  const config = loadConfig({ file: configFile, set: [...set, 'training.publish.mode=trainer'], env });
  return [
    'training.publish.mode=vllm',
    ...(config.training.lora ? [] : [`training.lora.r=${config.policy.maxLoraRank}`]),
  ];
}

/** The `--steps`-like size options as `--set` assignments, and how many eval scenarios to use. */
function demoSizes(values: ReturnType<typeof parseCommand<typeof DEMO_FLAGS>>['values']) {
  const sizes: string[] = [];
  const steps = intOption(values.steps, 'steps');
  const perStep = intOption(values['scenarios-per-step'], 'scenarios-per-step');
  const samples = intOption(values.samples, 'samples');
  const turns = intOption(values.turns, 'turns');
  const evalCount = intOption(values['eval-scenarios'], 'eval-scenarios') ?? 2;
  if (steps !== undefined) sizes.push(`training.steps=${steps}`);
  if (perStep !== undefined) sizes.push(`training.scenariosPerStep=${perStep}`);
  if (samples !== undefined) sizes.push(`training.samplesPerScenario=${samples}`);
  if (turns !== undefined) sizes.push(`training.dialogue.maxTurns=${turns}`, `evaluation.dialogue.maxTurns=${turns}`);
  if (evalCount < 1) throw new UsageError('--eval-scenarios must be at least 1');
  return { sizes, evalCount };
}

/** One demo as it runs: its context, its Temporal connection, its run, and the clock since it began. */
interface DemoRun {
  ctx: CommandContext;
  temporal: TemporalHandle;
  runName: string;
  evalCount: number;
  elapsed: () => string;
}

function announce({ ctx: { config }, temporal, runName }: DemoRun): void {
  say(`Attune demo: run ${runName}`);
  say(
    `  Temporal UI: ${temporal.uiUrl ?? '(external server)'}${temporal.uiUrl ? `  (the run: ${workflowUiUrl(temporal, trainingWorkflowId(runName))})` : ''}`,
  );
  say(
    `  policy ${config.training.baseModel} trained by the trainer at ${config.trainer.url}; simulator ${config.simulator.model} at ${config.simulator.baseURL}`,
  );
  say(
    `  ${config.training.steps} GRPO step(s) x ${config.training.scenariosPerStep} scenario(s) x ${config.training.samplesPerScenario ?? 4} sample(s), ${config.training.dialogue.maxTurns} turns`,
  );
}

/** Starts (or attaches to) the training run and prints each new status line until it ends. */
async function train({ ctx, temporal, runName, elapsed }: DemoRun) {
  const { outcome } = await startOrAttachTraining(temporal.client, ctx.config, runName);
  say(
    outcome === 'started'
      ? `[${elapsed()}] training started`
      : `[${elapsed()}] attached to the existing run ${runName}`,
  );
  const result = await withFollowerLink(ctx, temporal, async (link) => {
    const run = followTraining(link, runName, 3000);
    let last = '';
    for await (const s of run.statuses) {
      const line = `step ${Math.min(s.step, s.steps)}/${s.steps}: ${s.phase}, dialogues ${s.rollouts.done}/${s.rollouts.total}${s.lastMetrics ? `, last mean reward ${s.lastMetrics.reward.mean.toFixed(3)}` : ''}`;
      if (line !== last) {
        say(`[${elapsed()}] ${line}`);
        if (s.phase === 'waiting-for-operator')
          say(
            `  needs attention: ${s.blockedReason ?? ''}\n  fix the cause, then run \`npx attune resume ${runName}\` (retries the failed dialogues), or \`npx attune stop ${runName}\``,
          );
      }
      last = line;
    }
    return run.result;
  });
  say(`[${elapsed()}] training done: ${result.stepsApplied} step(s), final version ${result.version}`);
  return result;
}

/** Evaluates the base and the final policy on the same eval scenarios; their evaluation ids. */
async function evaluateBaseAndFinal(demo: DemoRun, stepsApplied: number): Promise<string[]> {
  const { ctx, temporal, runName, elapsed } = demo;
  const { config } = ctx;
  const evalIds: string[] = [];
  const evalScenarios = buildEvaluationInput(config, { split: 'eval' })
    .scenarios.slice(0, demo.evalCount)
    .map((s) => s.id);
  for (const [label, step] of [
    ['base', 0],
    ['final', stepsApplied],
  ] as const) {
    const input = buildEvaluationInput(config, {
      split: 'eval',
      only: evalScenarios,
      policy: `${runName}@${step}`,
      evalId: `${runName}-eval-${label}`,
      runName,
      step,
    });
    say(
      `[${elapsed()}] evaluating the ${label} policy (${runName}@${step}) on ${input.scenarios.length} eval scenario(s)`,
    );
    await startOrAttachEvaluation(temporal.client, config, input);
    // Only its summary is shown: its statuses are never asked for.
    const summary = await withFollowerLink(ctx, temporal, (link) => followEvaluation(link, input.evalId, 3000).result);
    say(
      `[${elapsed()}]   ${label}: Sentient score ${summary.score} over ${summary.count} dialogue(s) (success ${summary.success}, failure ${summary.failure}, failed ${summary.failed})`,
    );
    evalIds.push(summary.evalId);
  }
  return evalIds;
}

/** Prints the score change, writes the run's report and says where everything is. */
async function finish({ ctx, temporal, runName, elapsed }: DemoRun, evalIds: string[]): Promise<void> {
  const [before, after] = await Promise.all([
    loadEvaluationReport(ctx.store, evalIds[0]!),
    loadEvaluationReport(ctx.store, evalIds[1]!),
  ]);
  const comparison = compareEvaluations(before, after);
  say(
    `[${elapsed()}] score ${comparison.score.a} -> ${comparison.score.b} (${comparison.score.delta >= 0 ? '+' : ''}${comparison.score.delta})`,
  );

  const outDir = defaultReportDir(ctx.store, ctx.config.home, runName);
  const report = await writeReport({ store: ctx.store, target: runName, outDir });
  for (const warning of report.warnings) ctx.log.warn(warning);
  say('');
  say(`Done in ${elapsed()}.`);
  say(`  Temporal UI: ${temporal.uiUrl ?? '(external server)'}`);
  say(`  Run:         ${runName}   (resume or inspect: attune status ${runName})`);
  say(`  Report:      ${resolve(outDir, 'index.html')}`);
  say(`  Evaluations: attune report ${evalIds[1]}   |   attune eval compare ${evalIds[0]} ${evalIds[1]}`);
}

export async function demoCommand(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, DEMO_FLAGS, false);
  if (values.help) {
    say(DEMO_HELP);
    return 0;
  }
  const { sizes, evalCount } = demoSizes(values);
  const configFile = values.config ?? resolve(REPO_ROOT, 'configs', 'demo.yaml');
  const set = [...sizes, ...(values.set ?? [])];
  const ctx = commandContext({ config: configFile, set: [...demoPublishing(configFile, set), ...set] }, 'demo');
  const runName = values.resume ?? `demo-${new Date().toISOString().slice(0, 19).replace(/[-:T]/g, '')}`;
  const started = Date.now();
  const elapsed = () => `${Math.round((Date.now() - started) / 1000)}s`;

  return withRuntime(
    ctx,
    async (temporal) => {
      const demo: DemoRun = { ctx, temporal, runName, evalCount, elapsed };
      announce(demo);
      const result = await train(demo);
      await finish(demo, await evaluateBaseAndFinal(demo, result.stepsApplied));
      return 0;
    },
    { optimizer: true },
  );
}
