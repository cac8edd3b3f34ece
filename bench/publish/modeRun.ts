import { fetchAdapterManifest } from '../../src/trainer/adapterFiles.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { createTrainingRig, TINY_TRAINING } from '../../test/support/trainingRig.js';
import { smolLm2Dir, startShServedModel, trainerStateDirWith, VllmServer } from '../../test/support/vllmServer.js';
import { stepPublishes } from './stepPublishes.js';
import { medians, type ModeResult, type PublishMode, type StepRow } from './summary.js';

/** Eager, as start.sh runs full weights: the same execution mode for both, and a start in seconds, not minutes. */
const EAGER = ['--', '--compilation-config', '{"mode":0}'];

/** How start.sh starts vLLM for each mode (scripts/test-vllm.sh's LoRA server; the full-weight suite's). */
function vllmArgs(mode: PublishMode, stateDir: string): string[] {
  const common = ['--state-dir', stateDir, '--max-model-len', '1024'];
  return mode === 'lora'
    ? [...common, '--max-lora-rank', '16', '--max-loras', '4', ...EAGER]
    : ['--full-weights', ...common];
}

/** The run's settings: configs/vllm-local.yaml's or vllm-local-full.yaml's shape, sized for a 2-core CPU. */
function runSettings(mode: PublishMode, steps: number, policyURL: string): string[] {
  return [
    ...TINY_TRAINING('grpo', steps),
    'training.scenariosPerStep=1',
    'training.dialogue.maxTurns=1',
    'training.evalEvery=0',
    'training.baseModel=smollm2-135m',
    'training.publish.mode=vllm',
    'training.hyperparameters.max_length=512',
    ...(mode === 'lora'
      ? ['training.lora.r=8', 'training.lora.alpha=16', 'training.hyperparameters.learning_rate=0.0001']
      : ['training.hyperparameters.learning_rate=0.00001']),
    `policy.baseURL=${policyURL}`,
    `policy.model=${startShServedModel()}`,
    'policy.maxTokens=12',
    'policy.timeoutMs=120000',
  ];
}

/**
 * One mode: its vLLM started, a `steps`-step GRPO run sampled from and published to it, each step's
 * publish read from the run's history and its bytes from the trainer's manifest; then both stopped.
 */
export async function runMode(
  mode: PublishMode,
  steps: number,
  stateDir: string,
  startTimeoutMs: number,
  say: (line: string) => void,
): Promise<ModeResult> {
  say(`${mode}: starting vLLM (scripts/vllm/start.sh ${vllmArgs(mode, stateDir).join(' ')})`);
  const vllm = await VllmServer.start(`bench-publish-${mode}`, vllmArgs(mode, stateDir), startTimeoutMs);
  try {
    const rig = await createTrainingRig({
      trainerStateDir: trainerStateDirWith(smolLm2Dir(stateDir)),
      set: runSettings(mode, steps, vllm.url),
    });
    try {
      await rig.startWorkers();
      const run = `publish-${mode}`;
      say(`${mode}: ${steps} GRPO steps (run ${run})`);
      const { handle } = await rig.start(run);
      const firstRunId = (handle as { firstExecutionRunId?: string }).firstExecutionRunId;
      if (!firstRunId) throw new Error(`run ${run} already existed`);
      const result = await handle.result();
      if (result.stepsApplied !== steps) throw new Error(`${run} applied ${result.stepsApplied} of ${steps} steps`);
      const trainer = { url: rig.trainer.url, tokenEnv: rig.config.trainer.tokenEnv };
      const rows: StepRow[] = [];
      for (const publish of await stepPublishes(rig.client, trainingWorkflowId(run), firstRunId)) {
        const manifest = await fetchAdapterManifest(
          trainer,
          run,
          publish.step,
          mode === 'lora' ? 'adapter' : 'weights',
        );
        rows.push({ ...publish, bytes: manifest.files.reduce((sum, f) => sum + f.size, 0) });
      }
      if (rows.length !== steps) throw new Error(`${run}: ${rows.length} publishes in its history for ${steps} steps`);
      return { mode, run, steps: rows, median: medians(rows) };
    } finally {
      await rig.close();
    }
  } finally {
    await vllm.stop();
  }
}
