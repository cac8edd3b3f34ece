import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { teardownSharedTestEnv } from './temporalEnv.js';

// Keep test output readable: only Temporal's warnings and errors.
installTemporalLogging((process.env.ATTUNE_TEMPORAL_LOG_LEVEL as 'WARN' | undefined) ?? 'ERROR');

// Every temp dir of this mocha process (homes, trainer state with checkpoints, demo homes) and of the
// processes it starts goes under one scratch dir, removed at the end: a full run writes gigabytes.
// ATTUNE_KEEP_TEST_DIRS=1 keeps it for a look after a failure.
const scratch = mkdtempSync(join(tmpdir(), 'attune-mocha-'));
process.env.TMPDIR = scratch;

export const mochaHooks = {
  async afterAll(): Promise<void> {
    await teardownSharedTestEnv();
    if (process.env.ATTUNE_KEEP_TEST_DIRS === '1') console.log(`test dirs kept in ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  },
};
