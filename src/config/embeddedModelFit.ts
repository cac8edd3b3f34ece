import { pointsAtLocalServer } from './localLlmEndpoint.js';
import type { AttuneConfig } from './schema.js';

/**
 * What the embedded model server (SmolLM2 on node-llama-cpp, `localLlm`) can take is declared once
 * there: `parallel` requests generated at once, and `requestTimeoutMs`, past which the server itself
 * answers 504 to a request queued or generating. The settings of the commands that call it follow.
 * The general defaults are for a real server (8 evaluation dialogues in flight, a 120 s call): on the
 * embedded one 8 dialogues queue 4 deep behind its 2 slots, calls time out at 120 s while queued and
 * are retried at the back of the queue, and `attune eval` may never finish on 2 cores.
 */
export interface EmbeddedModelFit {
  /** Dialogues in flight: a dialogue has one call at a time, so one per slot keeps the queue empty. */
  evaluationConcurrency: number;
  /** A call waits as long as the server may take, and a little more, so the server's 504 answers first. */
  callTimeoutMs: number;
}

/** Time for the server's own 504 to reach the client before the client gives up on the call. */
const SERVER_ANSWERS_FIRST_MS = 5_000;

export function embeddedModelFit(
  localLlm: Pick<AttuneConfig['localLlm'], 'parallel' | 'requestTimeoutMs'>,
): EmbeddedModelFit {
  return {
    evaluationConcurrency: localLlm.parallel,
    callTimeoutMs: localLlm.requestTimeoutMs + SERVER_ANSWERS_FIRST_MS,
  };
}

/**
 * `config` with the settings derived from the embedded server where an endpoint points at it and the
 * operator wrote no value of their own (`isSet`: a file, a variable or --set named the key).
 */
export function fitToEmbeddedModel(config: AttuneConfig, isSet: (key: string) => boolean): AttuneConfig {
  const local = (baseURL: string) => pointsAtLocalServer(baseURL, config.localLlm.port);
  const policyLocal = local(config.policy.baseURL);
  const simulatorLocal = local(config.simulator.baseURL);
  // Held-out simulators play after the training simulator, on its queue: they follow it here.
  if (!policyLocal && !simulatorLocal && !config.evaluation.simulators.some((held) => local(held.baseURL)))
    return config;
  const fit = embeddedModelFit(config.localLlm);
  const timeout = (name: 'policy' | 'simulator', isLocal: boolean) =>
    isLocal && !isSet(`${name}.timeoutMs`) ? { timeoutMs: fit.callTimeoutMs } : {};
  return {
    ...config,
    policy: { ...config.policy, ...timeout('policy', policyLocal) },
    simulator: { ...config.simulator, ...timeout('simulator', simulatorLocal) },
    evaluation: {
      ...config.evaluation,
      ...(isSet('evaluation.concurrency') ? {} : { concurrency: fit.evaluationConcurrency }),
      simulators: config.evaluation.simulators.map((held, i) =>
        local(held.baseURL) && !isSet(`evaluation.simulators.${i}.timeoutMs`)
          ? { ...held, timeoutMs: fit.callTimeoutMs }
          : held,
      ),
    },
  };
}
