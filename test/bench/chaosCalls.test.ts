import assert from 'node:assert/strict';
import { CallOwners, countCalls, type LoggedCall, type ProcessFault } from '../../bench/chaos/calls.js';
import { planFaults } from '../../bench/chaos/plan.js';
import type { Transcript } from '../../src/core/transcript.js';

/** A transcript of one turn: opening O, policy reply R to [system, O], analysis A and user reply U about R. */
function transcript(id: string, opening: string, reply: string, analysis: string, userReply: string): Transcript {
  return {
    rolloutId: id,
    step: 1,
    opening: { text: opening, writtenBySimulator: true, latencyMs: 1, usage: { prompt: 1, completion: 1 } },
    turns: [
      {
        turn: 1,
        userMessage: opening,
        promptMessages: [
          { role: 'system', content: 'be kind' },
          { role: 'user', content: opening },
        ],
        policy: {
          raw: reply,
          reply,
          thinking: null,
          malformed: false,
          model: 'm',
          latencyMs: 1,
          usage: { prompt: 1, completion: 1 },
        },
        analysis: { analysis: {}, raw: analysis, attempts: 1, latencyMs: 1, usage: { prompt: 1, completion: 1 } },
        userReply: { text: userReply, latencyMs: 1, usage: { prompt: 1, completion: 1 } },
      },
    ],
  } as unknown as Transcript;
}

let clock = 1000;
function call(
  source: 'simulator' | 'policy',
  role: string,
  key: string,
  messages: string[],
  answer: string,
  port = 1,
): LoggedCall {
  clock += 10;
  return {
    source,
    role,
    key,
    status: 200,
    messages: messages.map((content, i) => ({ role: i === 0 ? 'system' : 'user', content })),
    answer,
    arrivedAtMs: clock,
    answeredAtMs: clock + 5,
    delivered: true,
    remotePort: port,
  };
}

/** Owners that know no process: every call is a plain one (no fault windows apply). */
const nobody = new CallOwners(() => []);

function counted(calls: LoggedCall[], transcripts: Transcript[], processFaults: ProcessFault[] = [], owners = nobody) {
  return countCalls({
    calls,
    owners,
    processFaults,
    transcripts,
    kindsOfStep: () => ['kill-llm-worker'],
    kindOfTime: () => ['kill-llm-worker'],
  });
}

const dialogueCalls = (opening: string) => [
  call('simulator', 'opening', 'o1', ['opening prompt'], opening),
  (() => {
    const c = call('policy', 'policy', 'p1', ['be kind', opening], 'R1');
    c.messages = [
      { role: 'system', content: 'be kind' },
      { role: 'user', content: opening },
    ];
    return c;
  })(),
  call('simulator', 'analysis', 'a1', ['analyse', `You: ${JSON.stringify(opening)}\nAssistant: "R1"`], 'A1'),
  call('simulator', 'reply', 'r1', ['reply', `You: ${JSON.stringify(opening)}\nAssistant: "R1"`], 'U1'),
];

describe('the chaos soak counts every call (bench/chaos/calls.ts)', () => {
  const good = transcript('d1', 'Hello there, it is me', 'R1', 'A1', 'U1');

  it('a dialogue whose calls each answered the transcript before them chains, none made twice', () => {
    const c = counted(dialogueCalls('Hello there, it is me'), [good]);
    assert.deepEqual([c.madeTwice, c.chainFailures, c.superseded, c.unrecorded], [0, 0, 0, 0]);
  });

  it('a call answered twice is a finished call made twice', () => {
    const calls = dialogueCalls('Hello there, it is me');
    const again = { ...calls[2]!, arrivedAtMs: clock + 100, answeredAtMs: clock + 105 };
    const c = counted([...calls, again], [good]);
    assert.equal(c.madeTwice, 1);
    assert.equal(c.unrecorded, 1);
  });

  it('a turn-1 reply that answered another opening than the one recorded does not chain (an opening made again)', () => {
    const calls = dialogueCalls('Hello there, it is me');
    // The opening was written again (a sampling simulator): the transcript records the second.
    const second = call('simulator', 'opening', 'o1', ['opening prompt'], 'Hi, a different opening');
    const t = transcript('d1', 'Hi, a different opening', 'R1', 'A1', 'U1');
    const c = counted([...calls, second], [t]);
    assert.equal(c.chainFailures, 1);
    assert.ok(
      c.problems.some((p) => /policy reply answered no request/.test(p)),
      c.problems.join('\n'),
    );
  });

  it('an analysis of a reply other than the recorded one does not chain', () => {
    const calls = dialogueCalls('Hello there, it is me');
    const t = transcript('d1', 'Hello there, it is me', 'R1', 'A-of-another-reply', 'U1');
    const c = counted(
      [...calls, call('simulator', 'analysis', 'a2', ['analyse', 'Assistant: R0'], 'A-of-another-reply')],
      [t],
    );
    assert.equal(c.chainFailures, 1);
  });

  it('plans the new fault kinds from the seed', () => {
    const kinds = planFaults({
      seed: 3,
      steps: 8,
      count: 8,
      kinds: [
        'kill-llm-worker-opening',
        'stop-llm-worker',
        'partition-llm-worker',
        'journal-write-fails',
        'sampling-simulator',
      ],
    }).map((f) => f.kind);
    assert.equal(kinds.length, 8);
    assert.equal(new Set(kinds).size, 5, 'each kind drawn before any again');
  });

  it("keeps the dialogues' faults off steps past lastRolloutStep (first-finished runs), the optimizer's on every step", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const plan = planFaults({
        seed,
        steps: 4,
        count: 7,
        kinds: ['kill-llm-worker', 'kill-trainer'],
        lastRolloutStep: 3,
      });
      assert.deepEqual(
        plan.filter((f) => f.phase === 'rollouts').map((f) => f.step),
        [1, 2, 3],
      );
      assert.equal(plan.filter((f) => f.phase === 'optimizer').length, 4);
    }
    assert.throws(
      () => planFaults({ seed: 1, steps: 4, count: 8, kinds: ['kill-llm-worker', 'kill-trainer'], lastRolloutStep: 3 }),
      /at most 7/,
    );
  });
});
