import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { createPublisherWorker } from '../../src/workers/publisherWorker.js';
import { RunningWorkers } from '../../test/support/runningWorkers.js';
import { REPO_ROOT } from '../../src/paths.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../../test/support/trainingRig.js';
import { tuneFakeServer } from '../orchestration/fakeServer.js';
import { LONG_TAIL_TURNS, longTailedBehaviour, longTailTimeoutMs } from './longTail.js';
import { policySlotLimit, type Options, type Weights } from './options.js';
import type { VllmFacade } from './vllmFacade.js';

/** The trainer's benchmark knob (trainer/src/attune_trainer/update/step_pad.py): each step takes at least this many seconds. */
const STEP_PAD_ENV = 'ATTUNE_TRAINER_MIN_STEP_SECONDS';

/** The stand-in replicas' names in the config: a, b, c, ... */
const replicaName = (i: number) => String.fromCharCode(97 + i);

/** The config of every run: the tiny trainer, the fake for both roles, the policy published as on vLLM (one, or replicas). */
export function runSettings(
  options: Options,
  steps: number,
  facades: readonly VllmFacade[],
  weights: Weights = 'lora',
): string[] {
  const replicas = facades.map((f, i) => ({ name: replicaName(i), baseURL: f.url }));
  return [
    ...TINY_TRAINING('grpo', steps),
    'training.evalEvery=0',
    `training.scenariosPerStep=${options.scenarios}`,
    `training.samplesPerScenario=${options.samples}`,
    `training.dialogue.maxTurns=${options.dialogues === 'long-tailed' ? LONG_TAIL_TURNS.max : options.turns}`,
    `training.maxInFlight=${options.scenarios * options.samples}`,
    'training.publish.mode=vllm',
    // lora: an adapter per version; full (no training.lora): the weights reloaded in place
    ...(weights === 'lora' ? ['training.lora.r=8'] : []),
    `policy.baseURL=${facades[0]!.url}`,
    ...(facades.length > 1 ? [`policy.replicas=${JSON.stringify(replicas)}`] : []),
    // Long-tailed calls run up to the lognormal's cap: a call cut short would be made again forever.
    ...(options.dialogues === 'long-tailed'
      ? [
          `policy.timeoutMs=${longTailTimeoutMs(options.latencyMs)}`,
          `simulator.timeoutMs=${longTailTimeoutMs(options.latencyMs)}`,
        ]
      : []),
    'policy.logprobs=off',
  ];
}

/**
 * A rig (fake LLM, trainer, workers) whose trainer pads each step to `padSeconds`, for the length
 * of `body`. The trainer is this checkout's (PYTHONPATH), whatever the shared virtualenv holds.
 */
export async function withPaddedRig<T>(
  options: Options,
  steps: number,
  padSeconds: number,
  facades: readonly VllmFacade[],
  body: (rig: TrainingRig) => Promise<T>,
  weights: Weights = 'lora',
): Promise<T> {
  for (const facade of facades) {
    facade.fullWeights.reloadMs = options.reloadMs;
    facade.slots = policySlotLimit(options);
  }
  const rig = await createTrainingRig({
    set: runSettings(options, steps, facades, weights),
    behaviour:
      options.dialogues === 'long-tailed'
        ? longTailedBehaviour(options.latencyMs)
        : // emotion change 0: no dialogue ends early, so every step has the same number of calls
          { latencyMs: options.latencyMs, analysis: () => ({ emotionChange: 0 }) },
    trainerEnv: {
      [STEP_PAD_ENV]: padSeconds.toFixed(3),
      PYTHONPATH: join(REPO_ROOT, 'trainer', 'src'),
      // One torch thread: with more, on a machine whose cores are busy (the workers, the fake), the
      // threads' spin-waits made the tiny model's step many times slower and its time erratic.
      OMP_NUM_THREADS: '1',
    },
  });
  const publishers = new RunningWorkers();
  let connection: NativeConnection | null = null;
  const adapterDirs: string[] = [];
  try {
    tuneFakeServer(rig.fake, 30_000);
    for (const facade of facades) facade.target = rig.fake.url;
    await rig.startWorkers();
    if (facades.length > 1) {
      // Each replica's publisher downloads the trainer's files and reloads its stand-in, as on a host of its own.
      connection = await NativeConnection.connect({ address: rig.address });
      for (const [i] of facades.entries()) {
        const adapterDir = mkdtempSync(join(tmpdir(), `attune-bench-replica-${replicaName(i)}-`));
        adapterDirs.push(adapterDir);
        publishers.start([
          await createPublisherWorker({
            connection,
            namespace: 'default',
            config: rig.config,
            store: rig.store,
            replica: replicaName(i),
            adapterDir,
          }),
        ]);
      }
    }
    return await body(rig);
  } finally {
    await publishers.stop();
    await rig.close();
    await connection?.close();
    for (const dir of adapterDirs) rmSync(dir, { recursive: true, force: true });
  }
}
