import assert from 'node:assert/strict';
import type { TrainingStatus } from '../../src/workflows/training.js';
import { loadConfig } from '../../src/config/load.js';
import { attune } from '../cli/attuneProcess.js';
import type { LoraAnswer } from '../support/fakeLora.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { statusWhen } from '../support/statusWhen.js';

/** One GRPO step with a LoRA adapter published to the fake vLLM (policy.baseURL). */
const VLLM = [...TINY_TRAINING('grpo', 1), 'training.publish.mode=vllm', 'training.lora.r=8'];

describe('training.publish.mode: vllm against the fake vLLM (real dev server, real trainer)', function () {
  this.timeout(600_000);
  let rig: TrainingRig;
  before(async () => {
    rig = await createTrainingRig({ set: VLLM });
    await rig.startWorkers();
  });
  after(() => rig?.close());

  const statusArgs = (run: string, json: boolean) => [
    'status',
    run,
    ...(json ? ['--json'] : []),
    ...rig.configSet.flatMap((s) => ['--set', s]),
  ];

  const refusals: { answer: LoraAnswer; status: number; message: string }[] = [
    { answer: 'rank', status: 500, message: 'LoRA rank 8 is greater than max_lora_rank 4.' },
    { answer: 'missing', status: 404, message: 'No adapter found for ' },
    { answer: 'key', status: 401, message: 'Unauthorized' },
  ];
  for (const { answer, status, message } of refusals) {
    it(`vLLM refuses the load (${answer}, HTTP ${status}): loaded once, the run waits for the operator, status names it all, resume publishes`, async () => {
      const run = `vllm-refused-${answer}`;
      const version = `${run}@1`;
      rig.fake.lora.refuse = answer;
      rig.fake.lora.maxLoraRank = 4;
      const { handle } = await rig.start(run);
      const blocked = await statusWhen(rig, run, (s) => s.phase === 'waiting-for-operator', 'the operator wait');
      const loads = rig.fake.lora.loads.filter((l) => l.name === version);
      assert.deepEqual(
        loads.map((l) => l.status),
        [status],
        'loaded once, not retried',
      );
      const path = loads[0]?.path ?? '';
      assert.match(path, /checkpoints\/step-000001\/policy$/);
      const expected = [
        `${rig.fake.url}/load_lora_adapter`,
        `HTTP ${status}`,
        `version ${version}`,
        `adapter ${path}`,
        message,
      ];
      const reason = blocked.blockedReason ?? '';
      for (const part of expected) assert.ok(reason.includes(part), `${part} in ${reason}`);
      assert.match(reason, /^step 1: weights not published: refused: vLLM/);

      const env = { TEMPORAL_ADDRESS: rig.address };
      const json = await attune(statusArgs(run, true), env);
      assert.equal(json.code, 0, json.stderr);
      const shown = JSON.parse(json.stdout) as TrainingStatus;
      assert.equal(shown.phase, 'waiting-for-operator');
      for (const part of expected) assert.ok(shown.blockedReason?.includes(part), `${part} in --json`);
      const text = await attune(statusArgs(run, false), env);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /waiting-for-operator/);
      const flat = text.stdout.replace(/\s+/g, ' ');
      for (const part of expected) assert.ok(flat.includes(part), `${part} in the text status:\n${text.stdout}`);
      assert.equal(rig.fake.lora.loads.filter((l) => l.name === version).length, 1, 'still loaded once');

      // The operator fixes the server; resume loads the adapter again, and the run completes.
      rig.fake.lora.refuse = null;
      await handle.executeUpdate('resume');
      const result = await handle.result();
      assert.equal(result.stepsApplied, 1);
      assert.equal(result.version, version);
      assert.deepEqual(
        rig.fake.lora.loads.filter((l) => l.name === version).map((l) => l.status),
        [status, 200],
      );
    });
  }

  it('a dropped connection and 503s are retried with backoff, status shows the last error, and the run completes when vLLM answers', async () => {
    const run = 'vllm-unavailable';
    const version = `${run}@1`;
    rig.fake.lora.next.push('drop');
    rig.fake.lora.refuse = 'unavailable';
    const { handle } = await rig.start(run);
    const env = { TEMPORAL_ADDRESS: rig.address };
    // `attune status` shows the publish retrying with vLLM's answer, in the phase it is in.
    const deadline = Date.now() + 120_000;
    for (;;) {
      const cli = await attune(statusArgs(run, true), env);
      assert.equal(cli.code, 0, cli.stderr);
      const shown = JSON.parse(cli.stdout) as TrainingStatus;
      if (/^publishing retrying \(attempt \d+\): .*HTTP 503.*Service Unavailable/.test(shown.blockedReason ?? '')) {
        assert.equal(shown.phase, 'publishing');
        break;
      }
      if (Date.now() > deadline) throw new Error(`no retrying publish shown; last ${cli.stdout}`);
    }
    rig.fake.lora.refuse = null;
    const result = await handle.result();
    assert.equal(result.stepsApplied, 1);
    assert.equal(result.version, version);
    const statuses = rig.fake.lora.loads.filter((l) => l.name === version).map((l) => l.status);
    assert.deepEqual(statuses.slice(0, 2), [0, 503]);
    assert.deepEqual(statuses.slice(2, -1), Array<number>(statuses.length - 3).fill(503));
    assert.equal(statuses.at(-1), 200);
    assert.match(rig.fake.lora.loads.at(-1)?.path ?? '', /checkpoints\/step-000001\/policy$/);
  });

  it('a 5-step run: each step records its publish latency (status, runs show), and vLLM keeps only the newest publish.keep versions', async () => {
    const run = 'vllm-bounded';
    const set = [...rig.configSet, 'training.steps=5', 'training.publish.keep=2'];
    rig.fake.lora.refuse = null;
    rig.fake.lora.servesOnlyLoaded = true;
    const { handle } = await rig.start(run, loadConfig({ env: {}, set }));
    const result = await handle.result();
    rig.fake.lora.servesOnlyLoaded = false;
    assert.equal(result.stepsApplied, 5);

    // Bounded: at most keep + the one being published were ever loaded; then the newest two remain.
    const ours = (names: readonly string[]) => names.filter((n) => n.startsWith(`${run}@`)).sort();
    const loads = rig.fake.lora.loads.filter((l) => l.name.startsWith(`${run}@`));
    assert.deepEqual(
      loads.map((l) => [l.name, l.status]),
      [1, 2, 3, 4, 5].map((k) => [`${run}@${k}`, 200]),
    );
    for (const load of loads) assert.ok(ours(load.table).length <= 3, `${load.name}: ${load.table.join(', ')}`);
    const listed = ((await (await fetch(`${rig.fake.url}/models`)).json()) as { data: { id: string }[] }).data;
    assert.deepEqual(ours(listed.map((m) => m.id)), [`${run}@4`, `${run}@5`]);
    assert.deepEqual(
      rig.fake.lora.unloads.filter((u) => u.name.startsWith(`${run}@`)),
      [1, 2, 3].map((k) => ({ name: `${run}@${k}`, status: 200 })),
    );

    // Publish latency: one first-token probe per version, a latency on every step, in every view.
    assert.deepEqual(
      rig.fake.probes.filter((m) => m.startsWith(`${run}@`)),
      [1, 2, 3, 4, 5].map((k) => `${run}@${k}`),
    );
    const metrics = await rig.metrics(run);
    for (const m of metrics)
      assert.ok(
        typeof m.publishLatencyMs === 'number' && m.publishLatencyMs >= 0,
        `step ${m.step}: ${m.publishLatencyMs}`,
      );
    const env = { TEMPORAL_ADDRESS: rig.address };
    const shown = await attune(['runs', 'show', run, '--json', ...set.flatMap((s) => ['--set', s])], env);
    assert.equal(shown.code, 0, shown.stderr);
    const detail = JSON.parse(shown.stdout) as { steps: { step: number; publishLatencyMs: number | null }[] };
    assert.deepEqual(
      detail.steps.map((s) => [s.step, s.publishLatencyMs]),
      metrics.map((m) => [m.step, m.publishLatencyMs]),
    );
    const json = await attune(statusArgs(run, true), env);
    assert.equal(json.code, 0, json.stderr);
    const status = JSON.parse(json.stdout) as TrainingStatus;
    assert.equal(status.lastMetrics?.publishLatencyMs, metrics[4]?.publishLatencyMs);
    const text = await attune(statusArgs(run, false), env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout.replace(/\s+/g, ' '),
      new RegExp(
        `publish latency ${metrics[4]?.publishLatencyMs} ms from the publish's start to ${run}@5's first token`,
      ),
    );
  });

  it('--continue after vLLM restarted loads the version it goes on from before sampling it', async () => {
    const run = 'vllm-continue';
    rig.fake.lora.refuse = null;
    rig.fake.lora.servesOnlyLoaded = true;
    try {
      const first = await rig.start(run);
      assert.equal((await first.handle.result()).version, `${run}@1`);
      rig.fake.lora.forgetAll(); // vLLM restarted: its runtime-loaded adapters are gone
      const more = loadConfig({ env: {}, set: [...rig.configSet, 'training.steps=2'] });
      const continued = await rig.start(run, more, { continueRun: true });
      assert.equal(continued.outcome, 'continued');
      const loadsOfOne = rig.fake.lora.loads.filter((l) => l.name === `${run}@1`);
      assert.deepEqual(
        loadsOfOne.map((l) => l.status),
        [200, 200],
        'loaded again before the run went on',
      );
      assert.equal(loadsOfOne[0]?.path, loadsOfOne[1]?.path, "from the trainer's checkpoint of step 1");
      const result = await continued.handle.result();
      assert.equal(result.version, `${run}@2`);
      assert.equal(
        rig.fake.missing.filter((m) => m.startsWith(`${run}@`)).length,
        0,
        'no policy call of the continued run found its version missing',
      );
    } finally {
      rig.fake.lora.servesOnlyLoaded = false;
    }
  });
});
