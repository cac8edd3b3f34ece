import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultResultsFile } from '../resultsFile.js';
import { SOAK_FAULT_KINDS, SOAK_FAULTS } from './plan.js';
import { PLANTS } from './plants.js';

export const HELP = `Soak: a multi-day full-weight run played in well under an hour, with faults drawn from the seed.

Usage: npm run soak [-- options]

  --steps N      full-weight optimizer steps of the tiny random model (default 200; --quick: 8)
  --faults N     faults to inject, one per step, never the first or last (default steps/10; --quick: 5,
                 one of each kind)
  --seed N       chooses the faults, their steps and replicas, and seeds the run (default 1)
  --quick        the smallest form: 8 steps, one fault of each kind, in a couple of minutes (RSS and
                 disk growth reported, not judged: its windows are too short to tell warm-up and
                 retention filling up from a leak)
  --window N     steps per measured window (default 50; --quick: half the steps)
  --timeout S    give up (and fail) after S seconds (default 3600; --quick: 900)
  --out FILE     results: the plan, the faults injected, each check, and per window the disk bytes,
                 each process's RSS and the largest workflow histories
                 (default bench/results/soak.json; --quick: bench/results/soak-quick.json)
  --help         this text

The run: GRPO on tiny-random with full weights (the real trainer on CPU, a snapshot every 5 steps,
every other step recovered from its log), 4 dialogues of 2 turns per step, published every step to two
fake vLLM replicas (processes with vLLM's dev-mode RL routes) by an \`attune worker --role publisher\`
beside each; the rollouts sample from the replicas; the fake OpenAI server plays the simulated user;
a real Temporal dev server, MinIO as the artifact store, and \`attune worker\` processes (llm, optimizer).
When the run waits for the operator, the soak resumes it as \`attune resume\` would.

Faults (drawn without replacement until each kind was used):
${SOAK_FAULT_KINDS.map((k) => `  ${k.padEnd(24)} ${SOAK_FAULTS[k].describe}`).join('\n')}

Checks (exit 1 on any breach, naming it):
  every planned fault injected; every step applied once (run result, the trainer's step, one
  metrics line and 4 dialogues per step); every turn's recorded weight version is the one the
  replica served when it answered; no replica left paused (GET /is_paused); no .tmp-* directory
  left in a publisher's download dir; disk flat (trainer state and downloads within retention);
  worker and trainer RSS not growing from the first window to the last; every workflow history
  within Temporal's limits (51,200 events, 50 MB).

Test-only: ATTUNE_SOAK_PLANT=KIND[,KIND...] plants a fault that a check must catch (exit 1):
${Object.entries(PLANTS)
  .map(([k, d]) => `  ${k.padEnd(9)} ${d}`)
  .join('\n')}

The last line reads: soak: N steps, F faults injected, checks held; ...`;

export interface SoakOptions {
  steps: number;
  faults: number;
  seed: number;
  quick: boolean;
  window: number;
  timeoutS: number;
  out: string;
}

export function soakOptions(argv: string[] = process.argv.slice(2)): SoakOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      steps: { type: 'string' },
      faults: { type: 'string' },
      seed: { type: 'string', default: '1' },
      quick: { type: 'boolean', default: false },
      window: { type: 'string' },
      timeout: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return 'help';
  const int = (name: string, text: string | undefined, fallback: number, min: number): number => {
    const n = text === undefined ? fallback : Number(text);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} ${text}: expected an integer >= ${min}`);
    return n;
  };
  const quick = values.quick;
  const steps = int('steps', values.steps, quick ? 8 : 200, 3);
  return {
    steps,
    faults: int('faults', values.faults, quick ? SOAK_FAULT_KINDS.length : Math.floor(steps / 10), 0),
    seed: int('seed', values.seed, 1, 0),
    quick,
    window: int('window', values.window, quick ? Math.ceil(steps / 2) : Math.min(50, Math.ceil(steps / 2)), 1),
    timeoutS: int('timeout', values.timeout, quick ? 900 : 3600, 1),
    out: resolve(values.out ?? defaultResultsFile('soak', quick ? 'quick' : null)),
  };
}
