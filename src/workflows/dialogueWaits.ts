import { getExternalWorkflowHandle, setHandler } from '@temporalio/workflow';
import type { WaitingCall } from '../core/outageWait.js';
import { continueSignal, rolloutWaitingSignal, tellParent } from './outageWait.js';

/**
 * The dialogues under a workflow (its rollouts, or an evaluation's) that wait for an operator at a
 * failed LLM call, as their notices report them; `continueAll` sends each the `continue` signal.
 */
export class DialogueWaits {
  private readonly waits = new Map<string, WaitingCall>();

  /** `forward`: pass each notice on to this workflow's own parent (an evaluation under a training run). */
  constructor(onChange: () => void, forward = false) {
    setHandler(rolloutWaitingSignal, async (notice) => {
      if (notice.waiting) {
        const { waiting: _, ...wait } = notice;
        this.waits.set(notice.rolloutId, wait);
      } else this.waits.delete(notice.rolloutId);
      onChange();
      if (forward) await tellParent(notice);
    });
  }

  get count(): number {
    return this.waits.size;
  }

  list(): WaitingCall[] {
    return [...this.waits.values()];
  }

  /** Sends every waiting dialogue the signal to retry its call; returns how many it sent. */
  async continueAll(): Promise<number> {
    const ids = [...this.waits.keys()];
    this.waits.clear();
    await Promise.all(
      ids.map(async (id) => {
        try {
          await getExternalWorkflowHandle(id).signal(continueSignal);
        } catch {
          // It closed meanwhile (its wait bound passed): nothing to continue.
        }
      }),
    );
    return ids.length;
  }
}
