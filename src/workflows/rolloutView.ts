import { defineQuery, setCurrentDetails, setHandler } from '@temporalio/workflow';
import type { TurnPhase } from '../core/dialogueTurn.js';
import type { RolloutSettings } from '../core/rolloutSettingsSchema.js';
import { DEFAULT_MAX_WAIT_MINUTES, waitingDetails } from '../core/outageWait.js';
import type { Outcome } from '../core/termination.js';
import * as timeline from '../core/rolloutTimeline.js';
import { OutageWait } from './outageWait.js';

export interface RolloutProgress {
  turn: number;
  emotion: number;
  emotions: number[];
  outcome: Outcome | null;
  /**
   * `scenario`: the scenario is loading (before the dialogue exists); `turn`: a turn activity is playing
   * the whole turn (`activityPer: turn`).
   */
  phase: 'scenario' | 'opening' | TurnPhase | 'turn' | 'saving' | 'done';
}

export const rolloutProgressQuery = defineQuery<RolloutProgress>('rolloutProgress');

/**
 * Answers the progress query from the rollout's first workflow task, while its scenario loads: a
 * query asked before the handler exists fails (the view, which answers it afterwards, needs the scenario).
 */
export function answerProgressWhileLoading(settings: RolloutSettings): void {
  const loading: RolloutProgress = {
    turn: 0,
    emotion: settings.initialEmotion,
    emotions: [],
    outcome: null,
    phase: 'scenario',
  };
  setHandler(rolloutProgressQuery, () => loading);
}

/** A summary only when the rollout gives summaries (see ACTIVITY_SUMMARIES_PATCH). */
export type Say = (text: () => string) => () => string | undefined;

export function sayWhen(summaries: boolean): Say {
  return (text) => () => (summaries ? text() : undefined);
}

/**
 * What a rollout shows while it runs: its progress (a query), the details in the UI, and the calls
 * that wait for an operator when their endpoint stays down.
 */
export class RolloutView {
  readonly progress: RolloutProgress;
  readonly gate: OutageWait;
  readonly say: Say;
  private readonly maxWaitMinutes: number;

  constructor(
    private readonly setup: {
      rolloutId: string;
      settings: RolloutSettings;
      scenarioId: string;
      summaries: boolean;
      /** Whether this rollout waits at an outage (`outageWaitEnabled`, asked when the rollout started). */
      waitsAtOutage: () => boolean;
      /** The dialogue's emotions, which grow as it goes. */
      emotions: number[];
    },
  ) {
    const { settings, emotions } = setup;
    this.say = sayWhen(setup.summaries);
    this.progress = { turn: 0, emotion: settings.initialEmotion, emotions, outcome: null, phase: 'opening' };
    setHandler(rolloutProgressQuery, () => this.progress);
    this.maxWaitMinutes = settings.maxWaitMinutes ?? DEFAULT_MAX_WAIT_MINUTES;
    this.gate = new OutageWait({
      enabled: setup.waitsAtOutage,
      rolloutId: setup.rolloutId,
      maxWaitMinutes: this.maxWaitMinutes,
      onChange: () => this.show(),
    });
  }

  show(): void {
    const { settings, scenarioId, summaries } = this.setup;
    const details = timeline.rolloutDetails({ scenarioId, maxTurns: settings.maxTurns, ...this.progress });
    if (this.gate.waiting) setCurrentDetails(`${waitingDetails(this.gate.waiting, this.maxWaitMinutes)}\n\n${details}`);
    else if (summaries) setCurrentDetails(details);
  }

  enter(phase: RolloutProgress['phase']): void {
    this.progress.phase = phase;
    this.show();
  }

  /** A call that waits for an operator when its endpoint stays down; `call` names it in the details. */
  waitable<A extends unknown[], R>(
    fn: (...args: A) => Promise<R>,
    call: () => string,
    endpoint: string,
  ): (...args: A) => Promise<R> {
    return this.gate.guard(fn, () => ({ call: call(), endpoint }));
  }
}
