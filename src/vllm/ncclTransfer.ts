import type { NcclRendezvous } from '../core/training/fullWeightsTransport.js';
import type { TrainerEndpoint } from '../trainer/trainerClient.js';
import {
  joinWeightTransferGroup,
  sendStepWeights,
  stepUpdateInfo,
  type StepUpdateInfo,
} from '../trainer/weightTransfer.js';
import { postRoute, servedWeightVersion, serverRoot, type FullWeightsServer } from './fullWeightsRoutes.js';
import type { FullWeightsTransport } from './fullWeightsTransport.js';

export interface NcclTransferInput {
  trainer: TrainerEndpoint;
  runName: string;
  step: number;
  rendezvous: NcclRendezvous;
}

/**
 * Per vLLM server, the label the last publish over NCCL from this process left on it. vLLM forgets
 * its side of the group when it restarts, and comes back labelled with its launch weights: a label
 * other than this one means the group is made again before the next send. A failed publish forgets
 * it too (vLLM: after a failed broadcast the group is unusable).
 */
const groupLabels = new Map<string, string>();

/**
 * Both sides of one NCCL meeting: neither returns before the other arrives, so they run at once.
 * When one fails, the other is waited for too (it gives up at its own rendezvous timeout): a retry
 * started before it ends would meet this attempt's leftover instead of its own. The first failure
 * is the one reported.
 */
async function together(vllmSide: Promise<unknown>, trainerSide: Promise<unknown>): Promise<void> {
  let first: unknown = undefined;
  let failed = false;
  const noteFailure = (error: unknown) => {
    if (!failed) [first, failed] = [error, true];
  };
  await Promise.all([vllmSide.catch(noteFailure), trainerSide.catch(noteFailure)]);
  if (failed) throw first;
}

/**
 * The group of the trainer's rank 0 (rank 0, hosting the rendezvous) and vLLM's workers (ranks 1..):
 * vLLM's old trainer connection released (`/shutdown_weight_transfer_engine`; nothing on a fresh
 * vLLM), then vLLM's `/init_weight_transfer_engine` and the trainer's join at once. `packed` is what
 * vLLM's trainer engine sends with; the buffer sizes are both sides' defaults (one vLLM version).
 */
async function makeGroup(server: FullWeightsServer, input: NcclTransferInput, what: string): Promise<void> {
  const { address, port, vllmWorkers } = input.rendezvous;
  const group = { master_address: address, master_port: port, world_size: 1 + vllmWorkers };
  await postRoute(server, '/shutdown_weight_transfer_engine', undefined, what);
  await together(
    postRoute(server, '/init_weight_transfer_engine', { init_info: { ...group, rank_offset: 1, packed: true } }, what),
    joinWeightTransferGroup(input.trainer, group),
  );
}

/**
 * Full weights sent by vLLM's native weight transfer (NCCL backend): the trainer's rank 0
 * broadcasts the step's tensors straight to vLLM's GPU workers, no file in between. Needs GPU hosts,
 * vLLM started with VLLM_SERVER_DEV_MODE=1 and `--weight-transfer-config '{"backend": "nccl"}'`,
 * and vLLM installed beside the trainer (docs/training.md). The orchestrator drives vLLM's routes
 * and the trainer's, pairing the calls that meet inside NCCL.
 */
export function ncclTransfer(input: NcclTransferInput): FullWeightsTransport {
  let updateInfo: StepUpdateInfo | null = null;
  return {
    name: 'nccl',
    describe: (version) =>
      `sending version ${version} over NCCL from the trainer's rank 0 (${input.rendezvous.address}:${input.rendezvous.port})`,
    async prepare(server, what) {
      const served = await servedWeightVersion(server);
      if (groupLabels.get(serverRoot(server.base)) !== served) await makeGroup(server, input, what);
      updateInfo = await stepUpdateInfo(input.trainer, input.runName, input.step);
    },
    async load(server, what) {
      await postRoute(server, '/start_weight_update', undefined, what);
      await together(
        postRoute(server, '/update_weights', { update_info: updateInfo }, what),
        sendStepWeights(input.trainer, input.runName, input.step),
      );
      await postRoute(server, '/finish_weight_update', undefined, what);
    },
    failed: (server) => groupLabels.delete(serverRoot(server.base)),
    served: (server, version) => groupLabels.set(serverRoot(server.base), version),
  };
}
