import { callSeed } from '../../src/core/seeds.js';

/** An LLM request as the fake server saw it. */
export interface ArrivedCall {
  seed: number | null;
  arrivedAtMs: number;
}

/**
 * Where a dialogue's time beyond its LLM latency goes, in ms, averaged over the dialogues:
 * - `start`: from the start of the timed run to the dialogue's first request;
 * - `within_turns`: between a call's answer and the next call of the same turn;
 * - `between_turns`: between a turn's last answer and the next turn's first request;
 * - `end`: from the last answer to the workflow's close (null where no close time is known).
 * An answer is taken to leave the fake server L ms after its request arrived.
 */
export interface DialogueGaps {
  start: number;
  /** `start` split by the server's times: until the workflow started, until its first workflow task was picked up, until the first request. */
  start_split: { workflow_started: number; first_task: number; first_request: number } | null;
  within_turns: number;
  between_turns: number;
  end: number | null;
  /** The same for the dialogue that finished last, the one that sets the wall time. */
  last_dialogue: { start: number; within_turns: number; between_turns: number; end: number | null };
}

const ROLES = ['policy', 'analysis', 'reply'] as const;

/**
 * Splits each dialogue's requests by the seeds Attune derives for them (see `callSeed`), so the
 * same measure applies to every variant and to the plain loop, all of which send those seeds.
 */
/** Server times of each dialogue's workflow (epoch ms), where there is one. */
export interface WorkflowTimes {
  startedAtMs: number;
  firstTaskStartedAtMs: number;
  closedAtMs: number;
}

export function dialogueGaps(
  calls: ArrivedCall[],
  seeds: number[],
  maxTurns: number,
  latencyMs: number,
  startedAtMs: number,
  workflows: WorkflowTimes[] | null,
): DialogueGaps | null {
  const owner = new Map<number, { dialogue: number; turn: number }>();
  seeds.forEach((seed, dialogue) => {
    owner.set(callSeed(seed, 0, 'opening'), { dialogue, turn: 0 });
    for (let turn = 1; turn <= maxTurns; turn++)
      for (const role of ROLES) owner.set(callSeed(seed, turn, role), { dialogue, turn });
  });
  const byDialogue: { at: number; turn: number }[][] = seeds.map(() => []);
  for (const call of calls) {
    const found = call.seed === null ? undefined : owner.get(call.seed);
    if (found) byDialogue[found.dialogue]!.push({ at: call.arrivedAtMs, turn: found.turn });
  }
  if (byDialogue.some((list) => list.length === 0)) return null;
  const per = byDialogue.map((list, dialogue) => {
    list.sort((a, b) => a.at - b.at);
    let within = 0;
    let between = 0;
    for (let k = 1; k < list.length; k++) {
      const gap = list[k]!.at - (list[k - 1]!.at + latencyMs);
      if (list[k]!.turn === list[k - 1]!.turn) within += gap;
      else between += gap;
    }
    const lastAnswer = list[list.length - 1]!.at + latencyMs;
    const workflow = workflows?.[dialogue];
    const closed = workflow?.closedAtMs;
    return {
      start: list[0]!.at - startedAtMs,
      within_turns: within,
      between_turns: between,
      end: closed !== undefined && Number.isFinite(closed) ? closed - lastAnswer : null,
      finishedAt: closed ?? lastAnswer,
      split: workflow
        ? [
            workflow.startedAtMs - startedAtMs,
            workflow.firstTaskStartedAtMs - workflow.startedAtMs,
            list[0]!.at - workflow.firstTaskStartedAtMs,
          ]
        : null,
    };
  });
  const avg = (pick: (p: (typeof per)[number]) => number | null): number | null => {
    const values = per.map(pick);
    return values.some((v) => v === null)
      ? null
      : round((values as number[]).reduce((a, b) => a + b, 0) / values.length);
  };
  const last = per.reduce((a, b) => (b.finishedAt > a.finishedAt ? b : a));
  return {
    start: avg((p) => p.start)!,
    start_split: per.every((p) => p.split && p.split.every(Number.isFinite))
      ? {
          workflow_started: avg((p) => p.split![0]!)!,
          first_task: avg((p) => p.split![1]!)!,
          first_request: avg((p) => p.split![2]!)!,
        }
      : null,
    within_turns: avg((p) => p.within_turns)!,
    between_turns: avg((p) => p.between_turns)!,
    end: avg((p) => p.end),
    last_dialogue: {
      start: round(last.start),
      within_turns: round(last.within_turns),
      between_turns: round(last.between_turns),
      end: last.end === null ? null : round(last.end),
    },
  };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
