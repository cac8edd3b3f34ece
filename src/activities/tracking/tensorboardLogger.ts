import { tensorboardDirKey } from '../../artifacts/keys.js';
import type { ArtifactStore } from '../../artifacts/store.js';
import { stepEventFile, stepEventFileName } from '../../core/tracking/tfEvents.js';
import { stepScalars } from '../../core/tracking/trackedValues.js';
import type { StepLogger } from './stepLogger.js';

/** One event file per step, written atomically under a name fixed by the step: a retry replaces it. */
export function tensorboardLogger(store: ArtifactStore): StepLogger {
  return {
    backend: 'tensorboard',
    async logStep(record, context) {
      const wallTime = Date.parse(record.time) / 1000;
      await store.putBytes(
        `${tensorboardDirKey(context.run)}/${stepEventFileName(record.step)}`,
        stepEventFile(wallTime, record.step, stepScalars(record)),
      );
    },
  };
}
