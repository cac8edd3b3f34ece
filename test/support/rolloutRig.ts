import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import type { AttuneConfig } from '../../src/config/schema.js';
import { taskQueuesFor } from '../../src/config/taskQueues.js';
import type { RolloutSettings } from '../../src/core/rolloutSettingsSchema.js';
import type { Scenario } from '../../src/core/scenario.js';
import type { RolloutSummary } from '../../src/core/transcript.js';
import { requireScenarioLibrary } from '../../src/scenarios/library.js';
import { temporalClient } from '../../src/temporal/connect.js';
import { createLlmIoWorkers } from '../../src/workers/llmIoWorkers.js';
import { RunningWorkers } from './runningWorkers.js';
import type { WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { rollout, RolloutInput } from '../../src/workflows/rollout.js';
import { FakeOpenAIServer, type FakeBehaviour } from './fakeOpenAI.js';
import { sharedTestEnv, sharedWorkflowBundle } from './temporalEnv.js';

let rigCounter = 0;

export const FIXTURE_SCENARIOS = join(__dirname, '..', 'fixtures', 'scenarios');

export function fixtureScenario(id: string): Scenario {
  const found = requireScenarioLibrary(FIXTURE_SCENARIOS).find((s) => s.id === id);
  if (!found) throw new Error(`fixture scenario ${id} missing`);
  return found;
}

/** Config for tests: the fake server for both roles, quick retries, a private task-queue prefix and home. */
export function testConfigSet(fakeUrl: string, set: string[] = []): string[] {
  const home = mkdtempSync(join(tmpdir(), 'attune-test-'));
  return [
    `home=${home}`,
    `temporal.taskQueuePrefix=t${process.pid}-${++rigCounter}-`,
    `policy.baseURL=${fakeUrl}`,
    'policy.model=fake-policy',
    `simulator.baseURL=${fakeUrl}`,
    'simulator.model=fake-simulator',
    'policy.timeoutMs=3000',
    'simulator.timeoutMs=3000',
    'policy.retry.initialIntervalMs=50',
    'policy.retry.maximumIntervalMs=200',
    'simulator.retry.initialIntervalMs=50',
    'simulator.retry.maximumIntervalMs=200',
    // The tiny random policy's replies are noise: the default guardrails would pause runs on them.
    'training.guardrails=[]',
    ...set,
  ];
}

export function testConfig(fakeUrl: string, set: string[] = []): AttuneConfig {
  return loadConfig({ env: {}, set: testConfigSet(fakeUrl, set) });
}

export interface RolloutRig {
  env: TestWorkflowEnvironment;
  /** The client the rig starts workflows with: `env.client`, or one with the rig's own data converter. */
  client: Client;
  fake: FakeOpenAIServer;
  config: AttuneConfig;
  /** The --set options that produce `config`, for worker processes. */
  configSet: string[];
  store: FileArtifactStore;
  settings(overrides?: Partial<RolloutSettings>): RolloutSettings;
  /** Starts in-process workers (omit for tests that run workers in a child process). */
  startWorkers(): Promise<void>;
  stopWorkers(): Promise<void>;
  runRollout(
    scenario: Scenario,
    seed: number,
    overrides?: Partial<RolloutSettings>,
    workflowId?: string,
  ): Promise<RolloutSummary>;
  startRollout(
    scenario: Scenario,
    seed: number,
    overrides?: Partial<RolloutSettings>,
    workflowId?: string,
  ): Promise<WorkflowHandleWithFirstExecutionRunId<typeof rollout>>;
  close(): Promise<void>;
}

export async function createRolloutRig(
  options: {
    behaviour?: FakeBehaviour;
    set?: string[];
    /** For the rig's client and workers (default: the configured one, as the CLI's). */
    dataConverter?: DataConverter;
    /** Another Temporal server than the suite's shared dev server (e.g. one serving the UI). */
    env?: TestWorkflowEnvironment;
  } = {},
): Promise<RolloutRig> {
  const env = options.env ?? (await sharedTestEnv());
  const client = options.dataConverter
    ? temporalClient(env.connection, env.namespace ?? 'default', options.dataConverter)
    : env.client;
  const fake = await FakeOpenAIServer.start(options.behaviour ?? {});
  const configSet = testConfigSet(fake.url, options.set);
  const config = loadConfig({ env: {}, set: configSet });
  const store = new FileArtifactStore(join(config.home, 'artifacts'));
  const running = new RunningWorkers();
  const rig: RolloutRig = {
    env,
    client,
    fake,
    config,
    configSet,
    store,
    settings: (overrides = {}) => ({ ...rolloutSettingsFromConfig(config), ...overrides }),
    async startWorkers() {
      running.start(
        await createLlmIoWorkers({
          connection: env.nativeConnection,
          namespace: env.namespace ?? 'default',
          config,
          store,
          workflowBundle: await sharedWorkflowBundle(options.dataConverter),
          ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
        }),
      );
    },
    async stopWorkers() {
      await running.stop();
    },
    async runRollout(scenario, seed, overrides = {}, workflowId) {
      return (await rig.startRollout(scenario, seed, overrides, workflowId)).result();
    },
    async startRollout(scenario, seed, overrides = {}, workflowId) {
      const input: RolloutInput = {
        rolloutId: workflowId ?? `rollout-${scenario.id}-${seed}-${rigCounter}-${Date.now()}`,
        scenario,
        settings: rig.settings(overrides),
        seed,
      };
      return client.workflow.start<typeof rollout>('rollout', {
        taskQueue: taskQueuesFor(config.temporal.taskQueuePrefix).rollouts,
        workflowId: input.rolloutId,
        args: [input],
      });
    },
    async close() {
      await rig.stopWorkers();
      await fake.close();
    },
  };
  return rig;
}
