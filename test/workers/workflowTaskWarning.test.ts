import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { WORKFLOW_TASK_WARN_ENV, warnOnlyOfLateWorkflowTasks } from '../../src/workers/workflowTaskWarning.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';

describe("the SDK's long-workflow-task warning (TMPRL1104)", () => {
  it('with local calls (the default) warns only past the rollouts’ workflow-task timeout: 20 s, or rollout.workflowTaskTimeoutMs', () => {
    const env: NodeJS.ProcessEnv = {};
    warnOnlyOfLateWorkflowTasks(loadConfig({ env: {} }), env);
    assert.equal(env[WORKFLOW_TASK_WARN_ENV], '20');
    const set: NodeJS.ProcessEnv = {};
    warnOnlyOfLateWorkflowTasks(loadConfig({ env: {}, set: ['rollout.workflowTaskTimeoutMs=20500'] }), set);
    assert.equal(set[WORKFLOW_TASK_WARN_ENV], '21');
  });

  it("keeps the SDK's 5 s with calls on task queues, and an operator's own threshold always", () => {
    const queued: NodeJS.ProcessEnv = {};
    warnOnlyOfLateWorkflowTasks(loadConfig({ env: {}, set: [...ROLLOUT_MODES.turnActivity] }), queued);
    assert.equal(queued[WORKFLOW_TASK_WARN_ENV], undefined);
    const operator: NodeJS.ProcessEnv = { [WORKFLOW_TASK_WARN_ENV]: '2' };
    warnOnlyOfLateWorkflowTasks(loadConfig({ env: {} }), operator);
    assert.equal(operator[WORKFLOW_TASK_WARN_ENV], '2');
  });
});
