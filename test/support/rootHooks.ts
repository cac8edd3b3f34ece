import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { teardownSharedTestEnv } from './temporalEnv.js';

// Keep test output readable: only Temporal's warnings and errors.
installTemporalLogging((process.env.ATTUNE_TEMPORAL_LOG_LEVEL as 'WARN' | undefined) ?? 'ERROR');

export const mochaHooks = {
  async afterAll(): Promise<void> {
    await teardownSharedTestEnv();
  },
};
