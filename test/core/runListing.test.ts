import assert from 'node:assert/strict';
import { evaluationRows, runRows, scoreFromMeanReward, type ListedExecution } from '../../src/core/runListing.js';

const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 12, minute));

function execution(over: Partial<ListedExecution>): ListedExecution {
  return {
    workflowId: 'train-a',
    status: 'COMPLETED',
    startTime: at(0),
    closeTime: at(1),
    runName: 'a',
    phase: null,
    step: null,
    meanReward: null,
    ...over,
  };
}

describe('run and evaluation listing rows', () => {
  it('one row per run: the newest execution of its chain, the first start, the latest event', () => {
    const rows = runRows(
      [
        execution({ status: 'CONTINUED_AS_NEW', startTime: at(0), closeTime: at(5), phase: 'rollouts', step: 0 }),
        execution({
          status: 'RUNNING',
          startTime: at(5),
          closeTime: null,
          phase: 'optimizer',
          step: 1,
          meanReward: 0.4,
        }),
        execution({
          workflowId: 'train-b',
          runName: 'b',
          startTime: at(10),
          closeTime: at(12),
          phase: 'done',
          step: 3,
        }),
      ],
      'train-',
    );
    assert.deepEqual(rows, [
      {
        name: 'b',
        phase: 'done',
        step: 3,
        lastReward: null,
        status: 'COMPLETED',
        started: at(10).toISOString(),
        updated: at(12).toISOString(),
      },
      {
        name: 'a',
        phase: 'optimizer',
        step: 1,
        lastReward: 0.4,
        status: 'RUNNING',
        started: at(0).toISOString(),
        updated: at(5).toISOString(),
      },
    ]);
  });

  it('a run that failed or was terminated says so, whatever phase it last recorded', () => {
    const [row] = runRows([execution({ status: 'TERMINATED', phase: 'rollouts' })], 'train-');
    assert.equal(row?.phase, 'terminated');
  });

  it('an execution without the newer attributes still lists, its name from the workflow id', () => {
    const [row] = runRows([execution({ runName: null, phase: null, step: null })], 'train-');
    assert.equal(row?.name, 'a');
    assert.equal(row?.phase, null);
    assert.equal(row?.step, null);
  });

  it('evaluations show the score on the 0-100 scale once completed', () => {
    const rows = evaluationRows([
      execution({ workflowId: 'eval-1', runName: null, meanReward: 0.425 }),
      execution({ workflowId: 'eval-2', status: 'RUNNING', closeTime: null, startTime: at(3), meanReward: null }),
    ]);
    assert.deepEqual(
      rows.map((r) => [r.id, r.score, r.status]),
      [
        ['eval-2', null, 'RUNNING'],
        ['eval-1', 42.5, 'COMPLETED'],
      ],
    );
    assert.equal(scoreFromMeanReward(0.7166666666666667), 71.666667);
  });
});
