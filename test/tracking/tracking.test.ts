import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tensorboardDirKey } from '../../src/artifacts/keys.js';
import { MlflowClient } from '../../src/activities/tracking/mlflowClient.js';
import { wandbRunId } from '../../src/activities/tracking/wandbLogger.js';
import { trackingStatusLine } from '../../src/core/tracking/trackingHealth.js';
import { stepScalars } from '../../src/core/tracking/trackedValues.js';
import { renderStatus } from '../../src/cli/render/status.js';
import { trainingStatusQuery, trainingWorkflowId, type TrainingStatus } from '../../src/workflows/training.js';
import { MlflowServer } from '../support/mlflowServer.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { ensureTrackingVenv, TRACKING_PYTHON } from '../support/trackingVenv.js';
import { REPO_ROOT } from '../../src/paths.js';
import { join } from 'node:path';

const READER = join(REPO_ROOT, 'test', 'tracking', 'read_tracking.py');
const FAULT_INJECTION_ENV = 'ATTUNE_TRACKING_FAULT_INJECTION';

function readBack<T>(what: 'tensorboard' | 'wandb', dir: string): T {
  return JSON.parse(execFileSync(TRACKING_PYTHON, [READER, what, dir], { encoding: 'utf8' })) as T;
}

/** A proxy in front of the MLflow server that can drop every connection, as a server that is down. */
async function switchableProxy(target: () => string): Promise<{ url: string; down: boolean; close(): Promise<void> }> {
  const state = { down: true };
  const server: Server = createServer((req, res) => {
    if (state.down) return void res.destroy();
    const url = new URL(req.url ?? '/', target());
    const upstream = request(url, { method: req.method, headers: { ...req.headers, host: url.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (error) => res.destroy(error));
    req.pipe(upstream);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(state, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  });
}

describe('experiment tracking: MLflow, TensorBoard, W&B (real MLflow server, TensorBoard and W&B readers)', function () {
  this.timeout(300_000);
  let mlflow: MlflowServer | undefined;
  let rig: TrainingRig | undefined;

  before(async function () {
    // The first run on a fresh clone installs the pinned packages (minutes); later runs reuse them.
    this.timeout(900_000);
    ensureTrackingVenv();
    mlflow = await MlflowServer.start();
  });
  after(async () => {
    await mlflow?.stop();
  });
  afterEach(async () => {
    delete process.env[FAULT_INJECTION_ENV];
    await rig?.close();
    rig = undefined;
  });

  it('logs params, each step once (through a forced retry of every tracking activity), evaluations and the report', async () => {
    process.env[FAULT_INJECTION_ENV] = 'fail-after-log';
    rig = await createTrainingRig({
      set: [
        ...TINY_TRAINING('grpo', 2),
        'training.evalEvery=2',
        `tracking.mlflow.trackingUri=${mlflow!.url}`,
        'tracking.mlflow.experiment=attune-tracking-test',
        'tracking.tensorboard=true',
        'tracking.wandb.mode=offline',
        'tracking.wandb.project=attune-test',
        `tracking.wandb.python=${TRACKING_PYTHON}`,
      ],
    });
    await rig.startWorkers();
    const run = 'tracked-1';
    const { handle } = await rig.start(run);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 2);
    // The last run of the workflow holds the last step's tracking activity: its first attempt failed on purpose.
    const history = await rig.client.workflow.getHandle(trainingWorkflowId(run)).fetchHistory();
    const scheduled = history.events?.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'trackStep',
    );
    const started = history.events?.find(
      (e) => e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === scheduled?.eventId?.toString(),
    );
    assert.equal(started?.activityTaskStartedEventAttributes?.attempt, 2, 'the tracking activity was retried');
    const recorded = await rig.metrics(run);
    assert.deepEqual(
      recorded.map((r) => r.step),
      [1, 2],
    );
    assert.ok(recorded[1]!.eval, 'step 2 ran an evaluation');

    // MLflow: one run, its params, one value per step and metric, the evaluation's score, the report.
    const client = new MlflowClient(mlflow!.url);
    const experimentId = await client.experimentId('attune-tracking-test');
    const found = await client.findRun(experimentId, run);
    assert.ok(found, 'the run is in MLflow');
    const runInfo = (await (await fetch(`${mlflow!.url}/api/2.0/mlflow/runs/get?run_id=${found.runId}`)).json()) as {
      run: { info: { status: string }; data: { params?: { key: string; value: string }[] } };
    };
    assert.equal(runInfo.run.info.status, 'FINISHED');
    const params = Object.fromEntries((runInfo.run.data.params ?? []).map((p) => [p.key, p.value]));
    assert.equal(params.algorithm, 'grpo');
    assert.equal(params.steps, '2');
    assert.equal(params['trainer.hyperparameters.learning_rate'], '0.001');
    // The environment the rewards were measured in, as each step's record names it.
    assert.equal(params['environment.promptHash'], recorded[0]!.environment?.promptHash);
    assert.equal(params['environment.simulator.model'], recorded[0]!.environment?.simulator.model);
    assert.ok(params['environment.promptHash'], 'the prompt hash is a param');
    for (const key of ['reward/mean', 'trainer/loss', 'rate/success']) {
      const history = await client.metricHistory(found.runId, key);
      assert.deepEqual(
        history.map((m) => [m.step, m.value]).sort((a, b) => a[0]! - b[0]!),
        recorded.map((r) => [r.step, stepScalars(r)[key]]),
        `${key}: exactly one value per step although every tracking activity ran twice`,
      );
    }
    const evalScore = await client.metricHistory(found.runId, 'eval/score');
    assert.deepEqual(
      evalScore.map((m) => [m.step, m.value]),
      [[2, recorded[1]!.eval!.score]],
    );
    const artifacts = (await (
      await fetch(`${mlflow!.url}/api/2.0/mlflow/artifacts/list?run_id=${found.runId}&path=report`)
    ).json()) as { files?: { path: string }[] };
    assert.deepEqual(
      artifacts.files?.map((f) => f.path),
      ['report/index.html'],
    );

    // TensorBoard, read by its own EventAccumulator.
    const tb = readBack<Record<string, [number, number][]>>('tensorboard', rig.store.locate(tensorboardDirKey(run)));
    for (const r of recorded)
      for (const [key, value] of Object.entries(stepScalars(r)))
        assert.deepEqual(
          tb[key]?.filter(([step]) => step === r.step).map(([, v]) => v),
          [Math.fround(value)],
          `TensorBoard ${key} at step ${r.step}`,
        );

    // W&B: one offline run directory per step, all with the run's id, each step's values once.
    const wandb = readBack<{ run_id: string; project: string; history: [number, Record<string, number>][] }[]>(
      'wandb',
      rig.store.locate(`runs/${run}/wandb`),
    );
    assert.deepEqual(
      wandb.map((w) => [w.run_id, w.project]),
      [
        [wandbRunId(run), 'attune-test'],
        [wandbRunId(run), 'attune-test'],
      ],
    );
    assert.deepEqual(
      wandb.flatMap((w) => w.history.map(([step, values]) => [step, values['reward/mean']])),
      recorded.map((r) => [r.step, r.reward.mean]),
    );
  });

  it('a tracker that is down does not hold training up: status shows it, the missed steps are logged when it is back', async () => {
    const proxy = await switchableProxy(() => mlflow!.url);
    try {
      rig = await createTrainingRig({
        set: [
          ...TINY_TRAINING('grpo', 3),
          `tracking.mlflow.trackingUri=${proxy.url}`,
          'tracking.mlflow.experiment=attune-outage-test',
        ],
      });
      await rig.startWorkers();
      const run = 'tracked-outage';
      const { handle } = await rig.start(run);
      const workflow = rig.client.workflow.getHandle(trainingWorkflowId(run));
      let status: TrainingStatus;
      const deadline = Date.now() + 120_000;
      for (;;) {
        status = await workflow.query(trainingStatusQuery);
        if ((status.tracking?.[0]?.pendingSteps.length ?? 0) > 0) break;
        assert.ok(Date.now() < deadline, `no pending tracking step reported: ${JSON.stringify(status)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const line = trackingStatusLine(status.tracking);
      assert.match(line ?? '', /^mlflow down since \d{4}-\d\d-\d\dT[^,]+, \d+ steps? pending \(MLflow /);
      assert.match(renderStatus(status), /tracking\s+mlflow down since/);
      proxy.down = false;

      const result = await handle.result();
      assert.equal(result.stepsApplied, 3, 'training went on while MLflow was down');
      const final = await workflow.query(trainingStatusQuery);
      assert.equal(trackingStatusLine(final.tracking), null, 'nothing pending once MLflow is back');
      const client = new MlflowClient(mlflow!.url);
      const found = await client.findRun(await client.experimentId('attune-outage-test'), run);
      assert.ok(found);
      const history = await client.metricHistory(found.runId, 'reward/mean');
      assert.deepEqual(
        history.map((m) => m.step).sort(),
        [1, 2, 3],
        'the steps missed while down were logged later, once each',
      );
    } finally {
      await proxy.close();
    }
  });
});
