import type { FullWeightsTransportName } from '../core/training/fullWeightsTransport.js';
import type { FullWeightsServer } from './fullWeightsRoutes.js';

/**
 * One way of putting a version's full weights into a paused vLLM (`publishFullWeights` pauses it,
 * labels the weights, resumes it and checks the label): `checkpoint` (checkpointReload.ts) or
 * `nccl` (ncclTransfer.ts).
 */
export interface FullWeightsTransport {
  readonly name: FullWeightsTransportName;
  /** What a publish of `version` does, named in its failures: `reloading version run@1 from DIR`. */
  describe(version: string): string;
  /** Before vLLM is paused: the work that need not hold requests up. */
  prepare(server: FullWeightsServer, what: string): Promise<void>;
  /** Loads the weights into the paused vLLM, whose label reads `loading <version>` meanwhile. */
  load(server: FullWeightsServer, what: string): Promise<void>;
  /** A publish failed somewhere: what it set up is not to be trusted next time. */
  failed(server: FullWeightsServer): void;
  /** A publish ended with vLLM serving `version`. */
  served(server: FullWeightsServer, version: string): void;
}
