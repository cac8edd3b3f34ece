import { postRoute } from './fullWeightsRoutes.js';
import type { FullWeightsTransport } from './fullWeightsTransport.js';

/**
 * Full weights reloaded in place from `weightsPath`, a complete model directory on vLLM's host:
 * `POST /collective_rpc` `reload_weights` (vLLM 0.32, VLLM_SERVER_DEV_MODE=1). Works on any vLLM,
 * CPU included; it costs a disk write and read of the whole model per step.
 */
export function checkpointReload(weightsPath: string): FullWeightsTransport {
  return {
    name: 'checkpoint',
    describe: (version) => `reloading version ${version} from ${weightsPath}`,
    prepare: async () => {},
    load: async (server, what) => {
      await postRoute(
        server,
        '/collective_rpc',
        { method: 'reload_weights', kwargs: { weights_path: weightsPath } },
        what,
      );
    },
    failed: () => {},
    served: () => {},
  };
}
