import { bytesUnder, pidByCommandLine, rssMiB } from './procfs.js';
import type { ProcessRole, SoakStack } from './stack.js';

/** One look at the run: its step, each followed process's RSS and the bytes on the disks that must stay flat. */
export interface Sample {
  atMs: number;
  step: number;
  rssMiB: Partial<Record<ProcessRole, number>>;
  trainerStateBytes: number;
  downloadBytes: number;
}

/**
 * Samples the run every `everyMs` until stopped: the step from the training status, the RSS of the
 * attune worker processes and the trainer (found by its state directory, so a restarted one is
 * followed), and the bytes under the trainer's state directory and the publishers' download dirs.
 */
export class Sampler {
  readonly samples: Sample[] = [];
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();

  constructor(
    private readonly stack: SoakStack,
    private readonly step: () => Promise<number | null>,
    private readonly everyMs: number,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** The step the run was at, at `atMs` (the last sample before it; 0 before the first). */
  stepAt(atMs: number): number {
    let step = 0;
    for (const s of this.samples) if (s.atMs <= atMs) step = s.step;
    return step;
  }

  /** Takes one sample now (also at the end, so the last steps are covered). */
  async sampleNow(): Promise<void> {
    const step = (await this.step()) ?? this.samples.at(-1)?.step ?? 0;
    const pids = this.stack.pids();
    const trainer = pidByCommandLine(['attune_trainer', this.stack.trainerStateDir]);
    if (trainer !== undefined) pids.trainer = trainer;
    const rss: Partial<Record<ProcessRole, number>> = {};
    for (const [role, pid] of Object.entries(pids) as [ProcessRole, number][]) {
      const mib = rssMiB(pid);
      if (mib !== null) rss[role] = mib;
    }
    this.samples.push({
      atMs: Date.now(),
      step,
      rssMiB: rss,
      trainerStateBytes: bytesUnder(this.stack.trainerStateDir),
      downloadBytes: this.stack.downloadDirs.reduce((sum, dir) => sum + bytesUnder(dir), 0),
    });
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      await this.sampleNow();
      await new Promise((resolve) => setTimeout(resolve, this.everyMs));
    }
  }
}
