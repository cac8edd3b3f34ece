import { getExternalWorkflowHandle, setHandler } from '@temporalio/workflow';
import type { WaitingCall } from '../core/outageWait.js';
import { continueSignal, rolloutWaitingSignal, tellParent } from './outageWait.js';

/**
 * Runs that ask this patch forget the wait of a dialogue they cancel (it sends no notice that its wait
 * is over); runs recorded before it kept showing it, and replay so.
 */
export const WAITS_FORGOTTEN_AT_CANCEL_PATCH = 'waits-forgotten-at-cancel';

/**
 * Runs that ask this patch forget the wait of a dialogue their watchdog finds closed (terminated by
 * hand while it waited); runs recorded before it kept showing it until their continue-as-new.
 */
export const WAITS_FORGOTTEN_AT_CLOSE_PATCH = 'waits-forgotten-at-close';

/**
 * The dialogues under a workflow (its rollouts, or an evaluation's) that wait for an operator at a
 * failed LLM call, as their notices report them; `continueAll` sends each the `continue` signal.
 */
export class DialogueWaits {
  private readonly waits = new Map<string, WaitingCall>();

  /**
   * `forward`: pass each notice on to this workflow's own parent (an evaluation under a training run).
   * `carried`: the waits an earlier run of the workflow knew of (its dialogues outlive it).
   */
  constructor(
    private readonly onChange: () => void,
    forward = false,
    carried: readonly WaitingCall[] = [],
  ) {
    for (const wait of carried) this.waits.set(wait.rolloutId, wait);
    setHandler(rolloutWaitingSignal, async (notice) => {
      if (notice.waiting) {
        const { waiting: _, ...wait } = notice;
        this.waits.set(notice.rolloutId, wait);
      } else this.waits.delete(notice.rolloutId);
      onChange();
      if (forward) await tellParent(notice);
    });
  }

  /** Forgets the waits of dialogues that ended without saying so (cancelled while they waited). */
  forget(ids: readonly string[]): void {
    let changed = false;
    for (const id of ids) changed = this.waits.delete(id) || changed;
    if (changed) this.onChange();
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
