import type { RolloutSettings } from './rolloutSettingsSchema.js';

/**
 * The start options of a rollout workflow that its settings decide, for clients and parent
 * workflows alike. (Apart from rolloutSettings.ts so that workflows need not load zod for it.)
 */
export function rolloutStartOptions(settings: RolloutSettings): { workflowTaskTimeout?: number } {
  return settings.workflowTaskTimeoutMs !== undefined ? { workflowTaskTimeout: settings.workflowTaskTimeoutMs } : {};
}
