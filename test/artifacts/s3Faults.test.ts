import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { createArtifactActivities } from '../../src/activities/artifacts.js';
import { openArtifactStore } from '../../src/artifacts/openArtifactStore.js';
import { loadConfig } from '../../src/config/load.js';
import type { Transcript } from '../../src/core/transcript.js';
import { trainingWorkflowId, type TrainingStatus } from '../../src/workflows/training.js';
import { attune } from '../cli/attuneProcess.js';
import { makeTranscript } from '../report/fixtures.js';
import { FIXTURE_SCENARIOS, testConfigSet } from '../support/rolloutRig.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { pausedBefore } from '../support/pausedBefore.js';
import { S3_BUILD_TIMEOUT_MS, S3Server, TEST_BUCKET } from '../support/s3Server.js';
import { statusWhen } from '../support/statusWhen.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

const STEPS = 2;
/** TINY_TRAINING's GRPO: 2 scenarios x 2 samples. */
const DIALOGUES = 4;
const BEHAVIOUR = { analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }) };

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('the S3 artifact store under faults (real MinIO)', function () {
  this.timeout(S3_BUILD_TIMEOUT_MS);
  let minio: S3Server;
  let rig: TrainingRig | undefined;
  before(async () => {
    minio = await S3Server.start();
  });
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });
  after(async () => {
    await minio?.stop();
  });

  /** The config keys of a store under `prefix` of the test bucket, with quick transcript-write retries. */
  const s3Set = (prefix: string) => [
    `artifacts.url=s3://${TEST_BUCKET}/${prefix}`,
    `artifacts.endpoint=${minio.url}`,
    'artifacts.retry.initialIntervalMs=100',
    'artifacts.retry.maximumIntervalMs=500',
    'artifacts.retry.maximumAttempts=3',
  ];

  /**
   * Where step 2's dialogues first touch the store, by mode: one activity per call writes the
   * transcript at the end; a local turn reads its journal before its first call (the opening's, for a
   * scenario without a first message).
   */
  const WAITS_AT = {
    perCall: { call: 'transcript', access: (run: string) => `writing s3://${TEST_BUCKET}/outage/rollouts/${run}/` },
    localTurn: {
      // A scenario without a first message reads the journal first for its opening (a regular expression).
      call: '(?:opening|turn 1) · turn journal',
      access: (run: string) => `reading s3://${TEST_BUCKET}/outage/journals/${run}--s2--`,
    },
  } as const;

  for (const mode of ['perCall', 'localTurn'] as const) {
    it(`${ROLLOUT_MODES[mode].join(' ')}: the store goes down before step 2: the dialogues wait for the operator at ${WAITS_AT[mode].call} with the store named; once it is back, attune resume completes the run with every transcript`, async () => {
      const run = `s3-outage-${mode.toLowerCase()}`;
      rig = await createTrainingRig({
        set: [...TINY_TRAINING('grpo', STEPS), ...s3Set('outage'), ...ROLLOUT_MODES[mode]],
        behaviour: BEHAVIOUR,
        storeEnv: minio.env,
      });
      await rig.startWorkers();
      const { handle } = await rig.start(run);
      await pausedBefore(rig, handle, run, 2);
      await minio.stop();
      await handle.executeUpdate('resume');

      const blocked = await statusWhen(
        rig,
        run,
        (s) => s.phase === 'waiting-for-operator' && s.rollouts.waiting === DIALOGUES,
        `every dialogue of step 2 to wait at ${WAITS_AT[mode].call}`,
        300_000,
      );
      assert.equal(blocked.step, 2);
      const reason = new RegExp(
        `${DIALOGUES} dialogues wait for an operator at a failed call .*${WAITS_AT[mode].call}.*, s3://${TEST_BUCKET}/outage at ${escaped(minio.url)}: the object store at ${escaped(minio.url)} is unreachable while ${escaped(WAITS_AT[mode].access(run))}`,
      );
      assert.match(blocked.blockedReason ?? '', reason);
      const cli = (args: string[]) =>
        attune([...args, ...rig!.configSet.flatMap((s) => ['--set', s])], {
          TEMPORAL_ADDRESS: rig!.address,
          ...minio.env,
        });
      const shown = await cli(['status', run, '--json']);
      assert.equal(shown.code, 0, shown.stderr);
      const status = JSON.parse(shown.stdout) as TrainingStatus;
      assert.equal(status.phase, 'waiting-for-operator');
      assert.match(status.blockedReason ?? '', reason);
      assert.equal((await rig.trainer.runState(run)).step, 1, 'step 2 was not applied while its transcripts wait');

      await minio.start();
      const resumed = await cli(['resume', run]);
      assert.equal(resumed.code, 0, resumed.stderr);
      const result = await rig.client.workflow.getHandle(trainingWorkflowId(run)).result();
      assert.equal(result.stepsApplied, STEPS);

      const keys = await rig.store.list(`rollouts/${run}`);
      assert.equal(keys.length, STEPS * DIALOGUES, keys.join(', '));
      const transcripts = await Promise.all(keys.map((key) => rig!.store.getJson<Transcript>(key)));
      assert.deepEqual(transcripts.map((t) => t.step).sort(), [1, 1, 1, 1, 2, 2, 2, 2]);
      assert.ok(transcripts.every((t) => t.turns.length > 0 && t.runName === run));
      assert.deepEqual(
        (await rig.metrics(run)).map((r) => r.step),
        [1, 2],
      );
    });
  }

  describe('wrong credentials or bucket: a non-retryable failure naming what to fix and the endpoint', () => {
    const transcript = makeTranscript(
      {
        id: 's3-creds',
        name: 'Kim',
        goalType: 'venting',
        personality: 'negative',
        emotions: [40, 45],
        outcome: 'turn-limit',
      },
      'creds',
    );

    for (const [what, env] of [
      ['a wrong secret', () => ({ AWS_ACCESS_KEY_ID: minio.accessKeyId, AWS_SECRET_ACCESS_KEY: 'not-the-secret' })],
      ['an unknown key id', () => ({ AWS_ACCESS_KEY_ID: 'nobody', AWS_SECRET_ACCESS_KEY: minio.secretAccessKey })],
      ['no credentials at all', () => ({})],
    ] as const) {
      it(`the transcript write with ${what}`, async () => {
        const config = loadConfig({ env: {}, set: s3Set('creds') });
        const activities = createArtifactActivities(openArtifactStore(config, env()));
        await assert.rejects(activities.saveTranscript(transcript), (error: unknown) => {
          assert.ok(error instanceof ApplicationFailure, String(error));
          assert.equal(error.type, 'ArtifactStoreRejected');
          assert.equal(error.nonRetryable, true);
          assert.match(error.message, /AWS_ACCESS_KEY_ID/);
          assert.match(error.message, /AWS_SECRET_ACCESS_KEY/);
          assert.ok(error.message.includes(minio.url), error.message);
          return true;
        });
      });
    }

    it('a bucket that does not exist: non-retryable too, naming the bucket, artifacts.url and the endpoint', async () => {
      const config = loadConfig({
        env: {},
        set: [...s3Set('creds'), 'artifacts.url=s3://no-such-bucket/runs'],
      });
      const activities = createArtifactActivities(openArtifactStore(config, minio.env));
      await assert.rejects(activities.saveTranscript(transcript), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure, String(error));
        assert.equal(error.type, 'ArtifactStoreRejected');
        assert.equal(error.nonRetryable, true);
        assert.ok(
          error.message.startsWith(`bucket "no-such-bucket" (artifacts.url) does not exist at ${minio.url}`),
          error.message,
        );
        return true;
      });
    });

    it('a command that starts workers says so before it starts any work, and exits 1', async () => {
      const fake = await FakeOpenAIServer.start({});
      try {
        const set = testConfigSet(fake.url, s3Set('creds-cli')).flatMap((s) => ['--set', s]);
        const out = await attune(
          ['rollout', '--scenario', 'test-venting-negative-baker', '--scenarios', FIXTURE_SCENARIOS, ...set],
          {
            TEMPORAL_ADDRESS: (await sharedTestEnv()).address,
            AWS_ACCESS_KEY_ID: minio.accessKeyId,
            AWS_SECRET_ACCESS_KEY: 'not-the-secret',
          },
        );
        assert.equal(out.code, 1, out.stderr);
        assert.match(
          out.stderr,
          new RegExp(
            `^attune rollout: the object store at ${escaped(minio.url)} refused the credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY while opening s3://${TEST_BUCKET}/creds-cli`,
            'm',
          ),
        );
        assert.equal(fake.calls.length, 0, 'no dialogue started');
      } finally {
        await fake.close();
      }
    });
  });
});
