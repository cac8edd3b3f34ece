import assert from 'node:assert/strict';
import type { InjectedFault } from '../../bench/chaos/inject.js';
import { takeoverSeconds, type EndedDialogue } from '../../bench/chaos/invariants.js';
import type { RecordedCall } from '../support/fakeOpenAI.js';

const AT = 1_000_000;
const KILLED = 41;
const OTHER = 42;

/** A simulator call of `persona`'s dialogue at `atMs` (relative to the fault), made by worker `pid`. */
function call(persona: string, atMs: number, pid: number): RecordedCall {
  return {
    role: 'analysis',
    nth: 1,
    key: `${persona}@${atMs}`,
    status: 200,
    seed: 1,
    arrivedAtMs: AT + atMs,
    answeredAtMs: AT + atMs + 5,
    messages: [{ role: 'system', content: `PERSONA\nName: ${persona}\n` }],
    answer: 'ok',
    delivered: true,
    remotePort: pid, // the owner lookup below reads the port as the pid
  };
}

const fault: InjectedFault = {
  fault: { kind: 'kill-llm-worker', step: 3, phase: 'rollouts', n: 1 },
  injected: true,
  backAtMs: AT + 5_000,
  killed: true,
  atMs: AT,
  pid: KILLED,
};

const measure = (calls: RecordedCall[], ended: EndedDialogue[]) =>
  takeoverSeconds([fault], calls, (port) => port, ended).get(1);

describe('chaos soak: recovery after a struck worker (takeoverSeconds)', () => {
  it('waits for each dialogue of the step the struck worker held: its next call by another worker', () => {
    const calls = [call('Ann', -1_000, KILLED), call('Ann', 19_500, OTHER), call('Ann', 19_800, OTHER)];
    const ended = [{ persona: 'Ann', step: 3, finishedAtMs: AT + 20_000 }];
    assert.equal(measure(calls, ended), 19.5);
  });

  it('a dialogue that finished before the fault is not held, although the workflow clock stamped it before its last call', () => {
    // Bea's last call came 0.5 s before the fault, in a workflow task that started 2 s before it: the
    // transcript's time (the task's start) precedes that call. Her next call is in the next step.
    const calls = [
      call('Ann', -1_000, KILLED),
      call('Bea', -500, KILLED),
      call('Ann', 19_500, OTHER),
      call('Bea', 45_000, OTHER),
    ];
    const ended = [
      { persona: 'Ann', step: 3, finishedAtMs: AT + 20_000 },
      { persona: 'Bea', step: 3, finishedAtMs: AT - 2_000 },
      { persona: 'Bea', step: 4, finishedAtMs: AT + 46_000 },
    ];
    assert.equal(measure(calls, ended), 19.5);
  });

  it('calls of an earlier step just before the fault hold nothing (the struck worker had finished them)', () => {
    // Cem's step-2 dialogue ended before the fault; his next one is in step 4.
    const calls = [call('Cem', -2_000, KILLED), call('Cem', 40_000, OTHER)];
    const ended = [
      { persona: 'Cem', step: 2, finishedAtMs: AT - 3_000 },
      { persona: 'Cem', step: 4, finishedAtMs: AT + 41_000 },
    ];
    assert.equal(measure(calls, ended), undefined);
  });
});
