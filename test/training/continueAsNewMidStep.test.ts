import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { TrainingInput } from '../../src/workflows/training.js';
import { DevServer } from '../../src/temporal/devServer.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { assertSameEssentials, essentials } from '../support/runEssentials.js';
import { storedPayloadValue } from '../support/temporalEnv.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

// Eight dialogues a step, two at a time: a step's history passes the lowered suggestion well before it ends.
const SET = [...TINY_TRAINING('grpo', 2), 'training.samplesPerScenario=4', 'training.maxInFlight=2'];
const BEHAVIOUR = { analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }) };

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

interface RunOfChain {
  runId: string;
  /** Rollout children started in this run. */
  childrenStarted: number;
  /** The state this run continued as new with, if it did. */
  continuedWith: TrainingInput['state'] | null;
}

/** Every run of a workflow id, first to last, from the latest run's history backwards. */
async function runChain(client: Client, workflowId: string): Promise<RunOfChain[]> {
  const chain: RunOfChain[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history: History = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    const last = events[events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes;
    const payload = last?.input?.payloads?.[0];
    chain.unshift({
      runId,
      childrenStarted: events.filter(
        (e) => e.childWorkflowExecutionStartedEventAttributes?.workflowType?.name === 'rollout',
      ).length,
      continuedWith: payload ? ((await storedPayloadValue<TrainingInput>(payload)).state ?? null) : null,
    });
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return chain;
}

describe('training: continue-as-new within a step, when the server suggests it (real dev server, real trainer)', function () {
  this.timeout(600_000);
  let server: DevServer | undefined;
  let rig: TrainingRig | undefined;

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
    await server?.stop();
    server = undefined;
  });

  async function trainedOn(dynamicConfig: Record<string, number>, run: string) {
    server = await DevServer.create({
      home: mkdtempSync(join(tmpdir(), 'attune-can-')),
      headless: true,
      dynamicConfig,
    });
    await server.start();
    rig = await createTrainingRig({ server, set: SET, behaviour: BEHAVIOUR });
    await rig.startWorkers();
    const { handle } = await rig.start(run);
    assert.equal((await handle.result()).stepsApplied, 2);
    assert.equal((await rig.trainer.runState(run)).step, 2, 'the trainer applied exactly 2 steps');
    const result = {
      metrics: essentials(await rig.metrics(run)),
      chain: await runChain(rig.client, trainingWorkflowId(run)),
    };
    await rig.close();
    rig = undefined;
    await server.stop();
    server = undefined;
    return result;
  }

  it('carries the step’s finished dialogues into the next run: none started twice or lost, metrics as without it', async () => {
    const undisturbed = await trainedOn({}, 'can-baseline');
    // One run per step when the server never suggests continuing within a step.
    assert.equal(undisturbed.chain.length, 2);
    assert.ok(undisturbed.chain.every((r) => !r.continuedWith?.stepInProgress));

    const split = await trainedOn({ 'limit.historyCount.suggestContinueAsNew': 40 }, 'can-split');
    const midStep = split.chain.filter((r) => r.continuedWith?.stepInProgress);
    assert.ok(midStep.length >= 2, `continued within a step ${midStep.length} time(s) over ${split.chain.length} runs`);
    for (const r of midStep) {
      const carried = r.continuedWith!.stepInProgress!;
      assert.ok(carried.pending.length > 0 && carried.outcomes.results.length > 0, JSON.stringify(carried));
    }
    assert.equal(
      split.chain.reduce((n, r) => n + r.childrenStarted, 0),
      2 * 8,
      'each dialogue of each step started once, across all runs',
    );
    assertSameEssentials(split.metrics, undisturbed.metrics);
  });
});
