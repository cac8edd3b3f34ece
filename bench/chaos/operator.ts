import type { WorkflowHandle } from '@temporalio/client';
import type { training } from '../../src/workflows/training.js';
import { now, sleep, statusOf } from './stack.js';

/** An endpoint taken down by a fault; the operator brings it back before resuming the run. */
export interface Outage {
  name: string;
  end(): void;
}

/**
 * Plays the operator of a disturbed run: when the run waits for the operator (too many failed
 * dialogues, a full trainer disk), it ends the outage under way, if any, and resumes the run,
 * the way `attune resume` does.
 */
export class Operator {
  outage: Outage | null = null;
  resumes = 0;
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();

  constructor(
    private readonly handle: WorkflowHandle<typeof training>,
    private readonly say: (line: string) => void,
  ) {}

  start(): void {
    this.loop = this.watch();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    this.endOutage();
  }

  /** Ends the outage under way (if any); returns when it ended, or null. */
  endOutage(): number | null {
    const outage = this.outage;
    if (!outage) return null;
    this.outage = null;
    outage.end();
    this.say(`${outage.name} is back`);
    return now();
  }

  private async watch(): Promise<void> {
    while (!this.stopped) {
      const status = await statusOf(this.handle);
      if (status?.phase === 'waiting-for-operator') {
        this.say(`operator: run waits at step ${status.step}: ${(status.blockedReason ?? '').slice(0, 240)}`);
        this.endOutage();
        await this.resume();
      }
      await sleep(250);
    }
  }

  private async resume(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.handle.executeUpdate('resume');
        this.resumes++;
        this.say('operator: resume');
        return;
      } catch {
        // the server may be restarting: ask again
        await sleep(500);
      }
    }
  }
}
