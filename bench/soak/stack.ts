import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChaosStack } from '../chaos/stack.js';
import { S3Server, TEST_BUCKET } from '../../test/support/s3Server.js';
import { createTrainingRig, type TrainingRig } from '../../test/support/trainingRig.js';
import { WorkerProcess } from '../../test/support/workerProcess.js';
import { DownloadGate } from './downloadGate.js';
import { ReplicaProcess } from './replicaProcess.js';

export const REPLICA_NAMES = ['r1', 'r2'] as const;

/** The attune and trainer processes whose RSS the soak follows, by role. */
export type ProcessRole = 'llm' | 'optimizer' | 'publisher-r1' | 'publisher-r2' | 'trainer';

/**
 * Everything a soak starts: chaos's dev server (SQLite, restartable) and worker processes, a real
 * trainer behind a gate that can hold a weights download, MinIO as the artifact store (stoppable: an
 * outage), two fake vLLM replica processes and a publisher worker process beside each. `close` ends
 * every process, whatever state it is in.
 */
export class SoakStack {
  readonly publishers: (WorkerProcess | null)[] = [null, null];
  private readonly spawnedPublishers: WorkerProcess[] = [];

  private constructor(
    readonly chaos: ChaosStack,
    readonly minio: S3Server,
    readonly gate: DownloadGate,
    readonly replicas: ReplicaProcess[],
    readonly rig: TrainingRig,
    /** Each publisher's download directory (`--adapter-dir`). */
    readonly downloadDirs: string[],
    private readonly home: string,
  ) {}

  static async start(set: string[], say: (line: string) => void): Promise<SoakStack> {
    const home = mkdtempSync(join(tmpdir(), 'attune-soak-'));
    const downloadDirs = REPLICA_NAMES.map((name) => join(home, `downloads-${name}`));
    for (const dir of downloadDirs) mkdirSync(dir);
    // What started before a part that failed to start is stopped again.
    const started: (() => Promise<unknown>)[] = [];
    try {
      say('starting the dev server, MinIO, two fake vLLM replicas and the trainer');
      const chaos = await ChaosStack.start();
      started.push(() => chaos.close());
      const minio = await S3Server.start();
      started.push(() => minio.stop().then(() => rmSync(minio.dataDir, { recursive: true, force: true })));
      // Worker processes inherit the soak's environment: the store's credentials reach them so.
      Object.assign(process.env, minio.env);
      const gate = await DownloadGate.start();
      started.push(() => gate.close());
      const replicas: ReplicaProcess[] = [];
      started.push(() => Promise.all(replicas.map((r) => r.kill())));
      for (const name of REPLICA_NAMES) replicas.push(await ReplicaProcess.start(name, home));
      const replicasSetting = JSON.stringify(replicas.map((r) => ({ name: r.name, baseURL: r.baseURL })));
      const rig = await createTrainingRig({
        server: chaos.server,
        storeEnv: minio.env,
        behaviour: {
          latencyMs: 50,
          analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }),
        },
        set: [
          ...set,
          `trainer.url=${gate.url}`,
          `policy.baseURL=${replicas[0]!.baseURL}`,
          `policy.replicas=${replicasSetting}`,
          `artifacts.url=s3://${TEST_BUCKET}/runs`,
          `artifacts.endpoint=${minio.url}`,
        ],
      });
      gate.target = rig.trainer.url;
      const stack = new SoakStack(chaos, minio, gate, replicas, rig, downloadDirs, home);
      started.splice(0, started.length, () => stack.close());
      say('starting the worker processes: llm, optimizer, a publisher per replica');
      await Promise.all([
        chaos.startWorker(rig, 'llm'),
        chaos.startWorker(rig, 'optimizer'),
        ...REPLICA_NAMES.map((_, i) => stack.startPublisher(i)),
      ]);
      return stack;
    } catch (error) {
      for (const stop of started.reverse()) await stop().catch(() => undefined);
      rmSync(home, { recursive: true, force: true });
      throw error;
    }
  }

  /** `attune worker --role publisher` for replica `i`, beside its vLLM; waits until it polls. */
  async startPublisher(i: number): Promise<WorkerProcess> {
    const replica = this.replicas[i]!;
    const worker = WorkerProcess.start(this.chaos.server.address, this.rig.configSet, [
      'worker',
      '--role',
      'publisher',
      '--replica',
      replica.name,
      '--policy-url',
      replica.root,
      '--adapter-dir',
      this.downloadDirs[i]!,
    ]);
    this.spawnedPublishers.push(worker);
    this.publishers[i] = worker;
    await worker.ready();
    return worker;
  }

  /** The live attune worker process of each role (one being restarted is left out; the trainer is found by the sampler). */
  pids(): Partial<Record<ProcessRole, number>> {
    const out: Partial<Record<ProcessRole, number>> = {};
    const add = (role: ProcessRole, pid: number | undefined) => {
      if (pid !== undefined) out[role] = pid;
    };
    add('llm', this.chaos.workers.llm?.running ? this.chaos.workers.llm.pid : undefined);
    add('optimizer', this.chaos.workers.optimizer?.running ? this.chaos.workers.optimizer.pid : undefined);
    this.publishers.forEach((p, i) => add(`publisher-${REPLICA_NAMES[i]!}`, p?.running ? p.pid : undefined));
    return out;
  }

  /** The trainer's state directory. */
  get trainerStateDir(): string {
    return this.rig.trainer.stateDir;
  }

  async close(): Promise<void> {
    const quietly = async (work: () => Promise<unknown>) => {
      try {
        await work();
      } catch {
        // clean-up goes on: every process gets its chance to be ended
      }
    };
    for (const worker of this.spawnedPublishers) await quietly(() => worker.kill('SIGKILL'));
    for (const replica of this.replicas) await quietly(() => replica.kill());
    await quietly(() => this.chaos.close());
    await quietly(() => this.rig.close());
    await quietly(() => this.gate.close());
    await quietly(() => this.minio.stop());
    rmSync(this.minio.dataDir, { recursive: true, force: true });
    rmSync(this.home, { recursive: true, force: true });
  }
}
