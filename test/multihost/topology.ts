import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { S3ArtifactStore } from '../../src/artifacts/s3Store.js';
import { REPO_ROOT } from '../../src/paths.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';
import { minioBinary, TEST_BUCKET } from '../support/s3Server.js';
import { TINY_TRAINING } from '../support/trainingRig.js';
import { HOST_HOME, hostDir } from './hostFiles.js';
import { HostProcess, until } from './hostProcess.js';
import { HOSTS, namespaceOf, type HostName } from './network.js';

const CLUSTER_SCRIPTS = join(REPO_ROOT, 'scripts', 'temporal-cluster');
/** Every service on a host listens on the host's address; these ports are the same on each. */
const SERVICE_PORT = 8000;
const S3_PORT = 9000;
export const TRAINER_TOKEN = 'multihost-trainer-token-0123456789';
const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'attune-mh', AWS_SECRET_ACCESS_KEY: 'attune-mh-secret' };
export const STEPS = 4;
export const QUEUE_PREFIX = 'mh-';

export const urls = {
  trainer: `http://${HOSTS.trainer}:${SERVICE_PORT}`,
  s3: `http://${HOSTS.s3}:${S3_PORT}`,
  fake: (host: 'vllm-1' | 'vllm-2' | 'users') => `http://${HOSTS[host]}:${SERVICE_PORT}`,
  /** The fake server's `GET /state` (fakeServerHost.ts). */
  fakeState: (host: 'vllm-1' | 'vllm-2' | 'users') => `http://${HOSTS[host]}:${SERVICE_PORT + 1}/state`,
  /** The fake server's `POST /latency?ms=N` (fakeServerHost.ts). */
  fakeLatency: (host: 'vllm-1' | 'vllm-2' | 'users', ms: number) =>
    `http://${HOSTS[host]}:${SERVICE_PORT + 1}/latency?ms=${ms}`,
};

/** The Temporal cluster of test:postgres, started inside the `temporal` namespace on its address. */
export async function startCluster(): Promise<{ address: string; state: string }> {
  // In /tmp as scripts/test-postgres.sh's: PostgreSQL runs as the `postgres` user, which cannot enter the
  // mocha process's private scratch directory (TMPDIR, see test/support/rootHooks.ts).
  const state = mkdtempSync('/tmp/attune-mh-cluster-');
  try {
    const { stdout } = await promisify(execFile)(
      'ip',
      ['netns', 'exec', namespaceOf('temporal'), 'bash', join(CLUSTER_SCRIPTS, 'up.sh'), state],
      { env: { ...process.env, ATTUNE_CLUSTER_HOST: HOSTS.temporal }, maxBuffer: 16 * 1024 * 1024 },
    );
    const envFile = readFileSync(stdout.trim().split('\n').pop()!, 'utf8');
    const address = /^ATTUNE_TEST_TEMPORAL_ADDRESS=(.+)$/m.exec(envFile)?.[1];
    if (!address) throw new Error(`up.sh wrote no ATTUNE_TEST_TEMPORAL_ADDRESS:\n${envFile}`);
    return { address, state };
  } catch (error) {
    // What up.sh started before it failed (PostgreSQL, services) goes with the state directory.
    await stopCluster(state);
    throw error;
  }
}

/** Stops the cluster's services and PostgreSQL and removes its state directory (scripts/temporal-cluster/down.sh). */
export async function stopCluster(state: string): Promise<void> {
  await promisify(execFile)('ip', [
    'netns',
    'exec',
    namespaceOf('temporal'),
    'bash',
    join(CLUSTER_SCRIPTS, 'down.sh'),
    state,
  ]);
}

/** What every attune process of the topology is given: hosts by address, artifacts in the bucket. */
export function configSet(): string[] {
  const replicas = (['vllm-1', 'vllm-2'] as const).map((name) => ({ name, baseURL: `${urls.fake(name)}/v1` }));
  return [
    `home=${HOST_HOME}`,
    `temporal.taskQueuePrefix=${QUEUE_PREFIX}`,
    `policy.baseURL=${urls.fake('vllm-1')}/v1`,
    'policy.model=fake-policy',
    'policy.timeoutMs=20000',
    `policy.replicas=${JSON.stringify(replicas)}`,
    `simulator.baseURL=${urls.fake('users')}/v1`,
    'simulator.model=fake-simulator',
    'simulator.timeoutMs=20000',
    'policy.retry.maximumIntervalMs=2000',
    'simulator.retry.maximumIntervalMs=2000',
    'training.guardrails=[]',
    ...TINY_TRAINING('grpo', STEPS),
    `scenarios.train=${FIXTURE_SCENARIOS}`,
    `scenarios.eval=${FIXTURE_SCENARIOS}`,
    'training.publish.mode=vllm',
    'training.lora.r=8',
    `trainer.url=${urls.trainer}`,
    `artifacts.url=s3://${TEST_BUCKET}/runs`,
    `artifacts.endpoint=${urls.s3}`,
  ];
}

export interface Topology {
  temporalAddress: string;
  set: string[];
  bucket: S3ArtifactStore;
  processes: HostProcess[];
  /** `host:label` -> process */
  process(host: HostName, label: string): HostProcess;
  attuneEnv: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

function attuneCommand(args: string[], set: string[]): string[] {
  return [process.execPath, join(REPO_ROOT, 'bin', 'attune.js'), ...args, ...set.flatMap((s) => ['--set', s])];
}

/** Starts every host's processes (Temporal already up) and waits until each answers or polls. */
export async function startTopology(temporalAddress: string): Promise<Topology> {
  const set = configSet();
  const attuneEnv: NodeJS.ProcessEnv = {
    TEMPORAL_ADDRESS: temporalAddress,
    TRAINER_TOKEN,
    ATTUNE_LOG_LEVEL: 'info',
    PYTHONPATH: join(REPO_ROOT, 'trainer', 'src'),
    ...S3_CREDENTIALS,
  };
  const processes: HostProcess[] = [];
  const add = (host: HostName, label: string, command: string[], env: NodeJS.ProcessEnv = attuneEnv) => {
    const p = new HostProcess(host, label, command, env).start();
    processes.push(p);
    return p;
  };
  try {
    const minioData = hostDir('s3', 'minio');
    add('s3', 'minio', [await minioBinary(), 'server', minioData, '--address', `${HOSTS.s3}:${S3_PORT}`, '--quiet'], {
      HOME: minioData,
      MINIO_ROOT_USER: S3_CREDENTIALS.AWS_ACCESS_KEY_ID,
      MINIO_ROOT_PASSWORD: S3_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
      MINIO_BROWSER: 'off',
      MINIO_UPDATE: 'off',
    });
    const fakeCommand = (host: HostName) => [
      process.execPath,
      '--import',
      'tsx',
      join(REPO_ROOT, 'test', 'multihost', 'fakeServerHost.ts'),
      HOSTS[host],
      String(SERVICE_PORT),
    ];
    const fakes = (['vllm-1', 'vllm-2', 'users'] as const).map((h) => add(h, 'fake', fakeCommand(h)));
    const trainerState = hostDir('trainer', 'trainer-state');
    add('trainer', 'trainer', [
      join(REPO_ROOT, '.venv', 'bin', 'python'),
      '-m',
      'attune_trainer',
      'serve',
      '--host',
      HOSTS.trainer,
      '--port',
      String(SERVICE_PORT),
      '--state-dir',
      trainerState,
    ]);
    await until(
      async () => (await fetch(`${urls.s3}/minio/health/ready`, { signal: AbortSignal.timeout(1000) })).ok,
      'MinIO on the s3 host',
    );
    const s3 = new S3Client({
      endpoint: urls.s3,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: {
        accessKeyId: S3_CREDENTIALS.AWS_ACCESS_KEY_ID,
        secretAccessKey: S3_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
      },
    });
    try {
      await s3.send(new CreateBucketCommand({ Bucket: TEST_BUCKET }));
    } finally {
      s3.destroy();
    }
    for (const fake of fakes) await fake.waitForLog(/fake server ready/, 'it listened');
    await until(
      async () => (await fetch(`${urls.trainer}/health`, { signal: AbortSignal.timeout(1000) })).ok,
      'trainer on the trainer host',
    );
    const worker = (role: string, extra: string[] = []) => attuneCommand(['worker', '--role', role, ...extra], set);
    const workers = [
      add('trainer', 'optimizer', worker('optimizer')),
      ...(['vllm-1', 'vllm-2'] as const).map((h) =>
        add(
          h,
          'publisher',
          worker('publisher', ['--replica', h, '--policy-url', urls.fake(h), '--adapter-dir', hostDir(h, 'adapters')]),
        ),
      ),
      add('workers-a', 'llm', worker('llm')),
      add('workers-b', 'llm', worker('llm')),
    ];
    for (const w of workers) await w.waitForLog(/"msg":"workers running"/, 'its workers ran');
    const bucket = new S3ArtifactStore({
      location: { bucket: TEST_BUCKET, prefix: 'runs' },
      endpoint: urls.s3,
      region: 'us-east-1',
      pathStyle: true,
      env: S3_CREDENTIALS,
    });
    return {
      temporalAddress,
      set,
      bucket,
      processes,
      attuneEnv,
      process(host, label) {
        const found = processes.find((p) => p.host === host && p.label === label);
        if (!found) throw new Error(`no process ${label} on ${host}`);
        return found;
      },
      async close() {
        bucket.close();
        for (const p of processes) await p.kill('SIGKILL');
      },
    };
  } catch (error) {
    // A host that did not come up: the ones started before it go too.
    for (const p of processes) await p.kill('SIGKILL');
    throw error;
  }
}

/** `attune train` on the client host, following the run to its end. */
export function trainFromClient(topology: Topology, run: string, set: readonly string[] = []): HostProcess {
  const train = new HostProcess(
    'client',
    `train ${run}`,
    attuneCommand(['train', '--name', run], [...topology.set, ...set]),
    topology.attuneEnv,
  );
  topology.processes.push(train);
  return train.start();
}
