import { rolloutWorkflowTaskTimeoutMs } from '../config/rolloutSettingsFromConfig.js';
import type { AttuneConfig } from '../config/schema.js';

/** The SDK core's threshold for its "workflow task duration exceeded N seconds" warning (TMPRL1104), read once per process. */
export const WORKFLOW_TASK_WARN_ENV = 'TEMPORAL_WORKFLOW_TASK_DURATION_WARN_SECONDS';

/**
 * With local calls (the default) a rollout's workflow task stays open while its turn's calls run, up
 * to 80 % of its timeout before the worker reports back, so the core's warning after 5 s would fire
 * for nearly every turn. It is raised to the rollouts' workflow-task timeout, past which a task is
 * late indeed, unless the operator set it. Call it before the process's workers run a workflow task.
 */
export function warnOnlyOfLateWorkflowTasks(config: AttuneConfig, env: NodeJS.ProcessEnv = process.env): void {
  const timeoutMs = rolloutWorkflowTaskTimeoutMs(config.rollout);
  if (config.rollout.llmCalls !== 'local' || timeoutMs === undefined || env[WORKFLOW_TASK_WARN_ENV] !== undefined)
    return;
  env[WORKFLOW_TASK_WARN_ENV] = String(Math.ceil(timeoutMs / 1000));
}
