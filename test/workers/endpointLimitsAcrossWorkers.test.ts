import assert from 'node:assert/strict';
import { createRolloutRig, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { WorkerProcess } from '../support/workerProcess.js';

const RATE = 4;
const WINDOW_MS = 4_000;
/**
 * In any window: the configured rate's calls, plus one per process at the window's edge, plus a little
 * for the time between a call's start and its arrival. Two processes that each held the whole limit
 * would make about twice the configured rate's calls.
 */
const MOST_IN_WINDOW = Math.round(((RATE * WINDOW_MS) / 1000) * 1.25);

/** The most calls that arrived within any `WINDOW_MS` (sliding, each window starting at a call). */
function busiestWindow(arrivals: number[]): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= WINDOW_MS) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('endpoint limits across worker processes (local calls, the default)', function () {
  let rig: RolloutRig | undefined;
  const workers: WorkerProcess[] = [];
  after(async () => {
    for (const w of workers) await w.kill();
    await rig?.close();
  });

  it(`two worker processes together keep requestsPerSecond=${RATE} per endpoint, each taking half`, async () => {
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 1 }) },
      set: [`policy.requestsPerSecond=${RATE}`, `simulator.requestsPerSecond=${RATE}`],
    });
    for (let i = 0; i < 2; i++) workers.push(WorkerProcess.start(rig.env.address, rig.configSet));
    await Promise.all(workers.map((w) => w.ready()));
    // Each counts the other polling within a census or two, and takes its share.
    await Promise.all(workers.map((w) => w.waitForLog(/share the endpoint limits".*"workers":2[,}]/)));

    const scenario = fixtureScenario('test-venting-negative-baker');
    const handles = await Promise.all(
      Array.from({ length: 16 }, (_, i) => rig!.startRollout(scenario, 100 + i, { maxTurns: 3 })),
    );
    await Promise.all(handles.map((h) => h.result()));

    // The calls ran in both processes, or the test would prove nothing about a shared limit.
    const identities = new Set<string>();
    for (const h of handles)
      for (const e of (await h.fetchHistory()).events ?? [])
        if (e.workflowTaskCompletedEventAttributes?.identity)
          identities.add(e.workflowTaskCompletedEventAttributes.identity);
    assert.equal(identities.size, 2, `the rollouts ran in both workers: ${[...identities].join(', ')}`);

    const arrivals = (roles: string[]) =>
      rig!.fake.calls.filter((c) => roles.includes(c.role)).map((c) => c.arrivedAtMs);
    const policy = busiestWindow(arrivals(['policy']));
    const simulator = busiestWindow(arrivals(['analysis', 'reply', 'opening']));
    assert.ok(policy <= MOST_IN_WINDOW, `${policy} policy calls within ${WINDOW_MS} ms (at most ${MOST_IN_WINDOW})`);
    assert.ok(
      simulator <= MOST_IN_WINDOW,
      `${simulator} simulator calls within ${WINDOW_MS} ms (at most ${MOST_IN_WINDOW})`,
    );
  });
});
