import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Connection, type Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import type { DevServer } from '../../src/temporal/devServer.js';
import { temporalClient } from '../../src/temporal/connect.js';
import { openArtifactStore } from '../../src/artifacts/openArtifactStore.js';
import type { ArtifactStore } from '../../src/artifacts/store.js';
import { runMetricsKey } from '../../src/artifacts/keys.js';
import { loadConfig } from '../../src/config/load.js';
import type { AttuneConfig } from '../../src/config/schema.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { startOrAttachTraining } from '../../src/client/trainingRuns.js';
import { createLlmIoWorkers } from '../../src/workers/llmIoWorkers.js';
import { createOptimizerWorker } from '../../src/workers/optimizerWorker.js';
import { RunningWorkers } from './runningWorkers.js';
import { FakeOpenAIServer, type FakeBehaviour } from './fakeOpenAI.js';
import { testConfigSet, FIXTURE_SCENARIOS } from './rolloutRig.js';
import { sharedTestEnv, sharedWorkflowBundle } from './temporalEnv.js';
import { TrainerProcess } from './trainerProcess.js';

export interface TrainingRig {
  /** Address of the Temporal server the rig uses. */
  address: string;
  client: Client;
  fake: FakeOpenAIServer;
  trainer: TrainerProcess;
  config: AttuneConfig;
  configSet: string[];
  /** The store the config names (`artifacts.*`), as the workers write to it. */
  store: ArtifactStore;
  startWorkers(which?: { llm?: boolean; optimizer?: boolean }): Promise<void>;
  stopWorkers(): Promise<void>;
  start(
    runName: string,
    config?: AttuneConfig,
    options?: Parameters<typeof startOrAttachTraining>[3],
  ): ReturnType<typeof startOrAttachTraining>;
  metrics(runName: string): Promise<StepMetricsRecord[]>;
  close(): Promise<void>;
}

/** Training settings small enough for CPU tests: 2 scenarios x 2 samples, 2 turns, tiny model. */
export const TINY_TRAINING = (algorithm: 'grpo' | 'ppo', steps = 3) => [
  `training.algorithm=${algorithm}`,
  `training.steps=${steps}`,
  'training.scenariosPerStep=2',
  `training.samplesPerScenario=${algorithm === 'grpo' ? 2 : 1}`,
  'training.dialogue.maxTurns=2',
  'training.seed=7',
  'training.baseModel=tiny-random',
  'training.hyperparameters.learning_rate=0.001',
  'training.hyperparameters.micro_batch_size=4',
  // A snapshot every step, as the crash and commit-fault tests expect of the trainer (full weights
  // default to every 10: trainer/tests/test_step_log.py and test/vllm/fullWeights.test.ts run that).
  'training.snapshotEvery=1',
  'policy.maxTokens=12',
  'policy.temperature=1',
  `scenarios.train=${FIXTURE_SCENARIOS}`,
  `scenarios.eval=${FIXTURE_SCENARIOS}`,
];

export async function createTrainingRig(
  options: {
    behaviour?: FakeBehaviour;
    set?: string[];
    server?: DevServer;
    trainerEnv?: NodeJS.ProcessEnv;
    /** The trainer's state directory (default: a new temp dir), e.g. one with a converted model linked in; removed on close. */
    trainerStateDir?: string;
    /** For the rig's own client and workers (default: the configured one, as the CLI's). */
    dataConverter?: DataConverter;
    /** Where the artifact store's credentials are read (an S3 store in the config); default: none. */
    storeEnv?: NodeJS.ProcessEnv;
  } = {},
): Promise<TrainingRig> {
  let address: string;
  let client: Client;
  let nativeConnection: NativeConnection;
  let ownConnections: (() => Promise<void>) | null = null;
  if (options.server || options.dataConverter) {
    address = options.server?.address ?? (await sharedTestEnv()).address;
    const connection = await Connection.connect({ address });
    client = temporalClient(connection, 'default', options.dataConverter);
    nativeConnection = await NativeConnection.connect({ address });
    ownConnections = async () => {
      await connection.close();
      await nativeConnection.close();
    };
  } else {
    const env: TestWorkflowEnvironment = await sharedTestEnv();
    address = env.address;
    client = env.client;
    nativeConnection = env.nativeConnection;
  }
  const fake = await FakeOpenAIServer.start(options.behaviour ?? {});
  const stateDir = options.trainerStateDir ?? mkdtempSync(join(tmpdir(), 'attune-trainer-'));
  const trainer = await TrainerProcess.start(stateDir, options.trainerEnv);
  const configSet = testConfigSet(fake.url, [
    `trainer.url=${trainer.url}`,
    'policy.timeoutMs=60000',
    ...(options.set ?? []),
  ]);
  const config = loadConfig({ env: {}, set: configSet });
  const store = openArtifactStore(config, options.storeEnv ?? {});
  const running = new RunningWorkers();
  const rig: TrainingRig = {
    address,
    client,
    fake,
    trainer,
    config,
    configSet,
    store,
    async startWorkers(which = { llm: true, optimizer: true }) {
      const common = {
        connection: nativeConnection,
        namespace: 'default',
        config,
        store,
        ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
      };
      const workflowBundle = await sharedWorkflowBundle(options.dataConverter);
      running.start([
        ...(which.llm ? await createLlmIoWorkers({ ...common, workflowBundle }) : []),
        ...(which.optimizer ? [await createOptimizerWorker(common)] : []),
      ]);
    },
    async stopWorkers() {
      await running.stop();
    },
    start: (runName, cfg = config, options = {}) => startOrAttachTraining(client, cfg, runName, options),
    async metrics(runName) {
      const text = await store.getText(runMetricsKey(runName));
      return (text ?? '')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as StepMetricsRecord);
    },
    async close() {
      await rig.stopWorkers();
      await trainer.kill('SIGKILL');
      await fake.close();
      await ownConnections?.();
      // The trainer's state dir, made here or given, goes with the rig: checkpoints add up over a suite
      // (SmolLM2's are 1.6 GB a step). Best effort: a fault test may still have a file system mounted
      // there (it unmounts it after this), and a given dir links to its model rather than holding it.
      try {
        rmSync(stateDir, { recursive: true, force: true });
      } catch {
        // what is left goes with the mocha scratch dir at the end of the run
      }
    },
  };
  return rig;
}
