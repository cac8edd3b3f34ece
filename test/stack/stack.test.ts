import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { REPO_ROOT } from '../../src/paths.js';
import { createLogger } from '../../src/log.js';
import { startRuleBasedUser, type RuleBasedUserServer } from '../../src/ruleuser/server.js';
import { connectTemporal, type TemporalHandle } from '../../src/temporal/connect.js';
import { freePort } from '../../src/temporal/devServer.js';
import { unpolledTrainingQueues } from '../../src/temporal/pollers.js';
import { eventually } from '../support/eventually.js';
import { ComposeProject, failureText, run, stackSettings, type StackSettings } from '../support/dockerStack.js';

/**
 * Attune's and the trainer's images, built by scripts/test-stack.sh from local base images, run
 * through docker-compose against the Temporal cluster on PostgreSQL on this machine: the real
 * compose files plus test/stack/docker-compose.host.yml (host networking, loopback ports).
 */

const PROJECT = 'attune-stack';
const STACK_FILES = ['docker-compose.yml', 'docker-compose.cpu.yml', 'test/stack/docker-compose.host.yml'];
// `docker-compose run` of the CLI service (profile tools) without starting what it depends on: the test started that.
const RUN_ATTUNE = ['--profile', 'tools', 'run', '--rm', '-T', '--no-deps', 'attune'];
// Each step of the run below makes 8 analysis calls (2 scenarios x 2 samples x 2 turns): the 3rd is
// in step 1, so however fast the rest of step 1 goes, step 2's dialogues run after the kill.
const KILL_AT_ANALYSIS = 3;

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

describe('the stack: Attune and trainer containers on the Temporal cluster on PostgreSQL', function () {
  this.timeout(15 * 60_000);
  let settings: StackSettings;
  let user: RuleBasedUserServer;
  let stack: ComposeProject;
  let temporal: TemporalHandle;
  let trainerUrl: string;
  const token = randomBytes(16).toString('hex');

  const docker = (args: string[]) => run(settings.dockerClient, args, process.env);
  const inspect = async (id: string, format: string) => {
    const result = await docker(['inspect', '-f', format, id]);
    if (result.code !== 0) throw new Error(failureText(`docker inspect ${id}`, result));
    return result.stdout.trim();
  };
  const trainerGet = (path: string) =>
    fetch(`${trainerUrl}${path}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });

  before(async () => {
    settings = stackSettings();
    user = await startRuleBasedUser();
    const [trainerPort, workerMetricsPort, optimizerMetricsPort] = await distinctFreePorts(3);
    trainerUrl = `http://127.0.0.1:${trainerPort}`;
    // Values for the compose files' own variables: every Attune container reaches Temporal, the
    // trainer and the simulated user on 127.0.0.1.
    stack = new ComposeProject(PROJECT, STACK_FILES, {
      ...process.env,
      ATTUNE_IMAGE: settings.attuneImage,
      TRAINER_CPU_IMAGE: settings.trainerImage,
      TEMPORAL_ADDRESS: settings.temporalAddress,
      TRAINER_URL: trainerUrl,
      TRAINER_TOKEN: token,
      SIMULATOR_BASE_URL: user.url,
      SIMULATOR_MODEL: 'rule-based-user',
      STACK_TRAINER_PORT: String(trainerPort),
      STACK_WORKER_METRICS_PORT: String(workerMetricsPort),
      STACK_OPTIMIZER_METRICS_PORT: String(optimizerMetricsPort),
    });
    // What an interrupted earlier run may have left: its containers and volumes.
    await stack.run(['--profile', 'tools', 'down', '--volumes', '--remove-orphans', '--timeout', '5']);
    const config = loadConfig({ env: { TEMPORAL_ADDRESS: settings.temporalAddress }, set: [] });
    temporal = await connectTemporal(config, createLogger({}, 'warn'), { startIfMissing: false });
  });

  after(async () => {
    if (stack) {
      const down = await stack.run(['--profile', 'tools', 'down', '--volumes', '--remove-orphans', '--timeout', '5']);
      if (down.code !== 0) process.stderr.write(failureText('docker-compose down', down));
      stack.remove();
    }
    await temporal?.close();
    await user?.close();
  });

  it('docker-compose config -q accepts docker-compose.yml, alone and with the CPU and sandbox overrides', async () => {
    // The file itself, as a user runs it from the repository root.
    const plain = await run('docker-compose', ['-f', join(REPO_ROOT, 'docker-compose.yml'), 'config', '-q'], {
      ...process.env,
    });
    assert.equal(plain.code, 0, failureText('docker-compose -f docker-compose.yml config -q', plain));
    for (const files of [
      ['docker-compose.yml'],
      ['docker-compose.yml', 'docker-compose.cpu.yml'],
      ['docker-compose.yml', 'docker-compose.sandbox.yml'],
    ]) {
      const project = new ComposeProject(PROJECT, files, process.env);
      try {
        const result = await project.run(['config', '-q']);
        assert.equal(result.code, 0, failureText(`docker-compose config -q (${files.join(' + ')})`, result));
      } finally {
        project.remove();
      }
    }
  });

  it('starts the trainer (CPU), attune-worker and attune-optimizer on the host network, all polling', async () => {
    const services = ['trainer', 'attune-worker', 'attune-optimizer'];
    const up = await stack.run(['up', '-d', '--no-deps', '--no-build', ...services]);
    assert.equal(up.code, 0, failureText('docker-compose up', up));
    await eventually(
      `trainer ${trainerUrl}/health and a worker on every queue of a training run`,
      async () => {
        const health = await fetch(`${trainerUrl}/health`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
        if (!health?.ok) return undefined;
        const unpolled = await unpolledTrainingQueues(temporal, loadConfig({ env: {}, set: [] }));
        return unpolled.length === 0 ? true : undefined;
      },
      300_000,
    );
    for (const service of services) {
      const id = await stack.containerId(service);
      assert.ok(id, `${service} has a container`);
      assert.equal(await inspect(id, '{{.HostConfig.NetworkMode}} {{.State.Running}}'), 'host true', service);
      // The compose file's health-check commands, run inside the images (only the ports differ).
      await eventually(
        `${service} healthy`,
        async () => ((await inspect(id, '{{.State.Health.Status}}')) === 'healthy' ? true : undefined),
        120_000,
      );
    }
    const networks = await docker(['network', 'ls', '--format', '{{.Name}}']);
    assert.deepEqual(networks.stdout.trim().split('\n').sort(), ['host', 'none'], 'no network was created');
  });

  it('trains 2 steps of configs/tiny.yaml with `docker-compose run attune train`; attune-worker killed mid-run; each step applied once', async () => {
    const name = `stack-${Date.now()}`;
    const train = stack.start([
      ...RUN_ATTUNE,
      'train',
      '--config',
      'configs/tiny.yaml',
      '--name',
      name,
      '--set',
      'training.steps=2',
    ]);
    const worker = await stack.containerId('attune-worker');
    assert.ok(worker);
    const startedBefore = await inspect(worker, '{{.State.StartedAt}}');
    const endedEarly = await Promise.race([
      eventually(
        `analysis ${KILL_AT_ANALYSIS} of the simulated user`,
        async () => (user.analyses >= KILL_AT_ANALYSIS ? true : undefined),
        600_000,
      ).then(() => null),
      train,
    ]);
    if (endedEarly) assert.fail(failureText('the train command ended before the kill', endedEarly));
    const killed = await docker(['kill', worker]);
    assert.equal(killed.code, 0, failureText('docker kill', killed));
    const analysesAtKill = user.analyses;
    const up = await stack.run(['up', '-d', '--no-deps', '--no-build', 'attune-worker']);
    assert.equal(up.code, 0, failureText('docker-compose up attune-worker', up));
    const restarted = await stack.containerId('attune-worker');
    assert.ok(restarted);
    assert.notEqual(await inspect(restarted, '{{.State.StartedAt}}'), startedBefore, 'attune-worker started again');

    const result = await train;
    assert.equal(result.code, 0, failureText('docker-compose run attune train', result));
    assert.match(result.stdout, new RegExp(`Run ${name}: 2 step\\(s\\) applied`));
    assert.doesNotMatch(result.stderr, /starting (them|one) in this process/, 'the containers served the run');
    assert.ok(user.analyses > analysesAtKill, 'dialogues ran after the kill');

    const state = (await (await trainerGet(`/v1/runs/${name}`)).json()) as { step: number };
    assert.equal(state.step, 2, 'the trainer applied exactly 2 steps');
    for (const step of [1, 2]) assert.equal((await trainerGet(`/v1/runs/${name}/steps/${step}`)).status, 200);
    assert.equal((await trainerGet(`/v1/runs/${name}/steps/3`)).status, 404);
    const metrics = await (await trainerGet('/metrics')).text();
    assert.match(metrics, /^attune_trainer_steps_total\{outcome="applied"\} 2$/m, 'no step applied twice');

    const show = await stack.run([...RUN_ATTUNE, 'runs', 'show', name, '--json']);
    assert.equal(show.code, 0, failureText('attune runs show', show));
    const detail = JSON.parse(show.stdout) as { steps: { step: number }[] };
    assert.deepEqual(
      detail.steps.map((s) => s.step),
      [1, 2],
      'one metrics line per step',
    );
  });
});
