import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createOptimizerActivities, type OptimizerStepInput } from '../../src/activities/optimizer.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';

/** A trainer that takes any step and keeps the bodies it was posted. */
async function recordingTrainer(): Promise<{ url: string; server: Server; bodies: unknown[] }> {
  const bodies: unknown[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') as { step: number };
      bodies.push(body);
      res.setHeader('content-type', 'application/json');
      const zero = { loss: 0, policy_loss: 0, value_loss: 0, kl: 0, entropy: 0, clip_fraction: 0, grad_norm: 0 };
      res.end(
        JSON.stringify({
          step: body.step,
          model: `run@${body.step}`,
          metrics: { ...zero, reward_mean: 0, advantage_mean: 0, tokens: 1, seconds: 0 },
          checkpoint: null,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, bodies };
}

/** A finished dialogue of two turns, each sampled by the full-weight version given. */
function transcript(rolloutId: string, versions: (string | undefined)[]) {
  return {
    rolloutId,
    step: 3,
    reward: 0.5,
    finalEmotion: 50,
    turns: versions.map((weightVersion, i) => ({
      turn: i + 1,
      userMessage: 'hi',
      promptMessages: [{ role: 'user', content: `hi ${i}` }],
      policy: {
        raw: `hello ${i}`,
        reply: `hello ${i}`,
        thinking: null,
        malformed: false,
        model: 'served-model',
        ...(weightVersion ? { weightVersion } : {}),
        latencyMs: 1,
        usage: { prompt: 1, completion: 1 },
      },
      analysis: null,
      emotionBefore: 40,
      emotionAfter: 50,
      state: 'B',
      userReply: null,
    })),
  };
}

describe("the optimizer step's samples carry each turn's own version (full weights with in-flight updates)", () => {
  const store = new FileArtifactStore(mkdtempSync(join(tmpdir(), 'attune-turn-versions-')));
  const activities = createOptimizerActivities(store);
  let trainer: Awaited<ReturnType<typeof recordingTrainer>>;
  beforeEach(async () => {
    trainer = await recordingTrainer();
  });
  afterEach(() => new Promise<void>((resolve) => trainer.server.close(() => resolve())));

  const step3 = (artifact: string): OptimizerStepInput => ({
    trainer: { url: trainer.url, tokenEnv: 'ATTUNE_TRAINER_TOKEN' },
    runName: 'run',
    step: 3,
    rollouts: [{ artifact, group: 'g' }],
    // the step's rollouts started on run@1; step 3 updates the weights of run@2
    policyVersion: 1,
  });
  const samplesPosted = () =>
    (trainer.bodies[0] as { samples: { policy_version?: number }[] }).samples.map((s) => s.policy_version);

  it('a turn on run@2 (published while the step rolled out) is sent as version 2, one on run@1 as 1; a turn without a version of the run as the step', async () => {
    await store.putJson('rollouts/run/a.json', transcript('a', ['run@1', 'run@2']));
    await store.putJson('rollouts/run/b.json', transcript('b', [undefined, 'other@9']));
    await new MockActivityEnvironment().run(activities.applyOptimizerStep, step3('rollouts/run/a.json'));
    assert.deepEqual(samplesPosted(), [1, 2]);
    trainer.bodies.length = 0;
    await new MockActivityEnvironment().run(activities.applyOptimizerStep, step3('rollouts/run/b.json'));
    assert.deepEqual(samplesPosted(), [1, 1]);
  });

  it('a rollout that names its own version (a step taking the first finished dialogues) has its unversioned turns sent as that version, the others as the step', async () => {
    await store.putJson('rollouts/run/d.json', transcript('d', [undefined, undefined]));
    await store.putJson('rollouts/run/e.json', transcript('e', [undefined, undefined]));
    await new MockActivityEnvironment().run(activities.applyOptimizerStep, {
      ...step3('rollouts/run/d.json'),
      rollouts: [
        { artifact: 'rollouts/run/d.json', group: 'g', policyVersion: 2 },
        { artifact: 'rollouts/run/e.json', group: 'g' },
      ],
    });
    assert.deepEqual(samplesPosted(), [2, 2, 1, 1]);
  });

  for (const [version, why] of [
    ['run@0', 'older than the version the step started on'],
    ['run@3', 'newer than the weights the step updates'],
  ] as const)
    it(`a turn ${why} (${version}) is refused before anything is posted (StaleTurn), never trained on silently`, async () => {
      await store.putJson('rollouts/run/c.json', transcript('c', ['run@1', version]));
      await assert.rejects(
        new MockActivityEnvironment().run(activities.applyOptimizerStep, step3('rollouts/run/c.json')),
        (error: unknown) =>
          error instanceof ApplicationFailure &&
          error.type === 'StaleTurn' &&
          error.nonRetryable === true &&
          error.message.includes(`sampled by ${version}`),
      );
      assert.equal(trainer.bodies.length, 0);
    });
});
