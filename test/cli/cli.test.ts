import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { FIXTURE_SCENARIOS, testConfigSet } from '../support/rolloutRig.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { scenarioHash } from '../../src/core/scenarioHash.js';
import { loadScenarioLibrary } from '../../src/scenarios/library.js';
import { attune } from './attuneProcess.js';

describe('the attune command', function () {
  this.timeout(180_000);
  let fake: FakeOpenAIServer;
  let address: string;
  // A fresh task-queue prefix per command: each starts (and stops) its own workers.
  const set = () => testConfigSet(fake.url).flatMap((s) => ['--set', s]);
  before(async () => {
    address = (await sharedTestEnv()).address;
    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 4 }) });
  });
  after(async () => {
    await fake.close();
  });

  it('has --help everywhere', async () => {
    // Each command in its own process, all at once: each spends its time loading the CLI's modules.
    const commands = [
      [],
      ['dev'],
      ['worker'],
      ['worker', 'deployment'],
      ['rollout'],
      ['scenarios'],
      ['eval'],
      ['schedule'],
      ['train'],
      ['status'],
      ['pause'],
      ['resume'],
      ['stop'],
      ['set'],
      ['report'],
      ['demo'],
      ['codec-server'],
    ];
    const results = await Promise.all(commands.map((command) => attune([...command, '--help'])));
    commands.forEach((command, i) => {
      const result = results[i]!;
      assert.equal(result.code, 0, `${command.join(' ')} --help: ${result.stderr}`);
      assert.match(result.stdout, /attune/);
    });
  });

  it('rollout --json runs one dialogue on the configured server, starting workers itself', async () => {
    const result = await attune(
      [
        'rollout',
        '--scenario',
        'test-venting-negative-baker',
        '--scenarios',
        FIXTURE_SCENARIOS,
        '--max-turns',
        '3',
        '--json',
        ...set(),
      ],
      { TEMPORAL_ADDRESS: address },
    );
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout) as {
      outcome: string;
      finalEmotion: number;
      turns: number;
      emotions: number[];
      artifact: string;
    };
    assert.equal(summary.outcome, 'turn-limit');
    assert.equal(summary.turns, 3);
    assert.deepEqual(summary.emotions, [40, 44, 48, 52]);
    assert.equal(summary.finalEmotion, 52);
    assert.match(summary.artifact, /^rollouts\/adhoc\/rollout-test-venting-negative-baker-.+\.json$/);
  });

  it('rollout prints the transcript with the emotion after each turn', async () => {
    const result = await attune(
      [
        'rollout',
        '--scenario',
        'test-venting-negative-baker',
        '--scenarios',
        FIXTURE_SCENARIOS,
        '--max-turns',
        '2',
        ...set(),
      ],
      { TEMPORAL_ADDRESS: address },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /\[Marta Quell\] so apparently ten years of baking/);
    assert.match(result.stdout, /emotion 40 -> 44 \(\+4, state B\)/);
    assert.match(result.stdout, /Outcome: turn-limit · final emotion 48/);
  });

  it('rollout prints model text without terminal control characters; --json keeps it exact', async () => {
    const saved = fake.behaviour;
    const injected = 'I hear you.\u001b[2J\u001b]0;owned\u0007 \u202eevil';
    fake.behaviour = { ...saved, policy: () => injected, reply: () => 'Thanks.\u009b31m Bye?' };
    try {
      const args = ['rollout', '--scenario', 'test-venting-negative-baker', '--scenarios', FIXTURE_SCENARIOS];
      const env = { TEMPORAL_ADDRESS: address };
      const result = await attune([...args, '--max-turns', '2', ...set()], env);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /\[assistant\] I hear you\.\\x1b\[2J\\x1b\]0;owned\\x07 \\u202eevil/);
      assert.match(result.stdout, /Thanks\.\\x9b31m Bye\?/);
      assert.doesNotMatch(result.stdout + result.stderr, /[\u001b\u0007\u009b\u202e]/);
      const json = await attune([...args, '--max-turns', '1', '--json', ...set()], env);
      assert.equal(json.code, 0, json.stderr);
      const transcript = JSON.parse(
        readFileSync((JSON.parse(json.stdout) as { artifactPath: string }).artifactPath, 'utf8'),
      ) as {
        turns: { policy: { reply: string } }[];
      };
      assert.equal(transcript.turns[0]?.policy.reply, injected);
    } finally {
      fake.behaviour = saved;
    }
  });

  it('eval --json prints score, success, failure, count and per-scenario results', async () => {
    const result = await attune(
      ['eval', '--scenarios', FIXTURE_SCENARIOS, '--json', '--set', 'evaluation.dialogue.maxTurns=2', ...set()],
      { TEMPORAL_ADDRESS: address },
    );
    assert.equal(result.code, 0, result.stderr);
    const report = JSON.parse(result.stdout) as {
      score: number;
      success: number;
      failure: number;
      count: number;
      results: { scenarioId: string; finalEmotion: number; outcome: string; turns: number }[];
    };
    assert.equal(report.count, 2);
    assert.equal(report.score, 48);
    assert.equal(report.success, 0);
    assert.equal(report.failure, 0);
    assert.deepEqual(report.results.map((r) => [r.scenarioId, r.finalEmotion, r.outcome, r.turns]).sort(), [
      ['test-not-my-fault-avoidant-cyclist', 48, 'turn-limit', 2],
      ['test-venting-negative-baker', 48, 'turn-limit', 2],
    ]);
  });

  it('eval off a terminal logs its progress: a JSON line whenever the counts change, the last with every dialogue', async () => {
    const saved = fake.behaviour;
    // Slow calls: the evaluation runs for seconds, long enough to be asked for its progress midway.
    fake.behaviour = { ...saved, latencyMs: 300 };
    try {
      const result = await attune(
        ['eval', '--scenarios', FIXTURE_SCENARIOS, '--json', '--set', 'evaluation.dialogue.maxTurns=2', ...set()],
        { TEMPORAL_ADDRESS: address },
      );
      assert.equal(result.code, 0, result.stderr);
      assert.equal((JSON.parse(result.stdout) as { count: number }).count, 2, 'stdout holds the report alone');
      assert.doesNotMatch(result.stderr, /\r|\u001b/, 'no terminal control characters in a log');
      const progress = result.stderr
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg: string; evalId?: string; total?: number; done?: number })
        .filter((record) => record.msg.startsWith('dialogues '));
      assert.ok(progress.length >= 2, `a line midway and a final one:\n${result.stderr}`);
      for (const record of progress) {
        assert.match(record.msg, /^dialogues [0-2]\/2 finished \(0 failed, [0-2] running\)$/);
        assert.equal(record.total, 2);
        assert.ok(record.evalId?.startsWith('eval-'));
      }
      assert.equal(new Set(progress.map((r) => r.msg)).size, progress.length, 'one line per change');
      assert.equal(progress.at(-1)?.msg, 'dialogues 2/2 finished (0 failed, 0 running)');
    } finally {
      fake.behaviour = saved;
    }
  });

  it('eval --repeats 2 --json runs two seeds per scenario and gives the score a confidence interval and a manifest', async () => {
    const result = await attune(
      [
        'eval',
        '--scenarios',
        FIXTURE_SCENARIOS,
        '--repeats',
        '2',
        '--json',
        '--set',
        'evaluation.dialogue.maxTurns=2',
        ...set(),
      ],
      { TEMPORAL_ADDRESS: address },
    );
    assert.equal(result.code, 0, result.stderr);
    const report = JSON.parse(result.stdout) as {
      score: number;
      count: number;
      repeats: number;
      ci: { low: number; high: number };
      intervals: { byGoalType: Record<string, { score: { low: number; high: number }; dialogues: number }> };
      results: { scenarioId: string; repeat: number; seed: number }[];
      manifest: {
        attuneVersion: string;
        promptHash: string;
        simulator: { model: string; served?: { unavailable?: string } };
        seeds: { repeats: number };
        scenarios?: Record<string, string>;
      };
    };
    assert.equal(report.count, 4);
    assert.equal(report.repeats, 2);
    assert.deepEqual(report.ci, { low: 48, high: 48 }); // the fake simulator scores every dialogue alike
    assert.equal(report.intervals.byGoalType.venting?.dialogues, 2);
    assert.deepEqual(report.results.map((r) => [r.scenarioId, r.repeat]).sort(), [
      ['test-not-my-fault-avoidant-cyclist', 0],
      ['test-not-my-fault-avoidant-cyclist', 1],
      ['test-venting-negative-baker', 0],
      ['test-venting-negative-baker', 1],
    ]);
    assert.equal(new Set(report.results.map((r) => r.seed)).size, 4);
    assert.equal(report.manifest.seeds.repeats, 2);
    assert.match(report.manifest.promptHash, /^[0-9a-f]{8}$/);
    assert.match(report.manifest.attuneVersion, /^\d+\.\d+\.\d+/);
    // Each scenario's content, as the dialogues loaded it from the files.
    const library = loadScenarioLibrary(FIXTURE_SCENARIOS).scenarios;
    assert.deepEqual(report.manifest.scenarios, Object.fromEntries(library.map((sc) => [sc.id, scenarioHash(sc)])));
    // What the simulator's endpoint lists under the configured name: the fake lists no "fake-simulator".
    assert.match(
      report.manifest.simulator.served?.unavailable ?? '',
      /^"fake-simulator" is not among the \d+ model\(s\) http:\/\/127\.0\.0\.1:\d+\/v1\/models lists$/,
    );
    const bad = await attune(['eval', '--scenarios', FIXTURE_SCENARIOS, '--repeats', '0', ...set()]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--repeats "0": a whole number from 1 to 20/);
  });

  it('eval --name runs under that id; eval compare refuses other environments, and prints the differences, as a table or JSON', async function () {
    this.timeout(480_000); // three evaluations
    // One artifact store for the commands, a fresh task-queue prefix for each.
    const home = ['--set', `home=${mkdtempSync(join(tmpdir(), 'attune-compare-'))}`];
    const env = { TEMPORAL_ADDRESS: address };
    const stamp = Date.now();
    for (const [name, turns, emotion] of [
      [`cmp-a-${stamp}`, 2, 40],
      [`cmp-b-${stamp}`, 3, 40],
      [`cmp-c-${stamp}`, 2, 45],
    ] as const) {
      const result = await attune(
        [
          'eval',
          '--scenarios',
          FIXTURE_SCENARIOS,
          '--name',
          name,
          '--set',
          `evaluation.dialogue.maxTurns=${turns}`,
          '--set',
          `evaluation.dialogue.initialEmotion=${emotion}`,
          ...set(),
          ...home,
        ],
        env,
      );
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, new RegExp(`HTML report: attune report ${name}\n$`));
    }
    // Evaluations that differ only in the starting emotion measure different things: refused, field named.
    const emotion = await attune(['eval', 'compare', `cmp-a-${stamp}`, `cmp-c-${stamp}`, ...set(), ...home]);
    assert.equal(emotion.code, 1, emotion.stderr);
    assert.match(emotion.stderr, /different environments \(protocol\.initialEmotion\)/);
    assert.match(emotion.stderr, /protocol\.initialEmotion is 40 in cmp-a-\d+, 45 in cmp-c-\d+/);
    assert.match(emotion.stderr, /--allow-different-environment/);
    assert.equal(emotion.stdout, '');
    const refused = await attune(['eval', 'compare', `cmp-a-${stamp}`, `cmp-b-${stamp}`, ...set(), ...home]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /different environments \(protocol\.maxTurns\)/);
    const allow = ['--allow-different-environment'];
    const table = await attune(['eval', 'compare', `cmp-a-${stamp}`, `cmp-b-${stamp}`, ...allow, ...set(), ...home]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, new RegExp(`^A = cmp-a-${stamp}\nB = cmp-b-${stamp}\n`));
    assert.match(table.stdout, /^score +48 +52 +\+4$/m);
    assert.match(table.stdout, /^test-venting-negative-baker +48 +52 +\+4$/m);
    const json = await attune([
      'eval',
      'compare',
      `cmp-a-${stamp}`,
      `cmp-b-${stamp}`,
      '--json',
      ...allow,
      ...set(),
      ...home,
    ]);
    assert.equal(json.code, 0, json.stderr);
    const comparison = JSON.parse(json.stdout) as { score: { a: number; b: number; delta: number } };
    assert.deepEqual(comparison.score, { a: 48, b: 52, delta: 4 });
    // The paired statistics: both scenarios gain 4; two scenarios cannot reach significance (exact p = 2/4).
    const paired = JSON.parse(json.stdout) as {
      difference: number;
      ci: { low: number; high: number };
      pValue: number;
      significant: boolean;
      warnings: string[];
      environmentDiffers: string[];
    };
    assert.deepEqual(paired.environmentDiffers, ['protocol.maxTurns']);
    assert.equal(paired.difference, 4);
    assert.deepEqual(paired.ci, { low: 4, high: 4 });
    assert.equal(paired.pValue, 0.5);
    assert.equal(paired.significant, false);
    assert.deepEqual(paired.warnings, [
      `protocol differs: protocol.maxTurns is 2 in cmp-a-${stamp}, 3 in cmp-b-${stamp}`,
    ]);
    assert.match(table.stdout, /^paired difference B-A \+4, 95 % CI \[4\.00, 4\.00\], p = 0\.5: not significant$/m);
    assert.match(table.stderr, /^warning: protocol differs: protocol\.maxTurns is 2 in cmp-a-\d+, 3 in cmp-b-\d+$/m);
  });

  it('rejects a wrong config naming the key, and an unknown scenario naming the directory', async () => {
    const bad = await attune(['rollout', '--scenario', 'x', '--set', 'rollout.dialogue.maxTurns=zero']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /rollout\.dialogue\.maxTurns/);
    // The flat key of earlier releases is taken as the new one, with one warning however often it is set.
    const flat = await attune([
      'rollout',
      '--scenario',
      'x',
      '--set',
      'rollout.maxTurns=zero',
      '--set',
      'rollout.maxTurns=0',
    ]);
    assert.equal(flat.code, 2);
    assert.equal(flat.stderr.match(/rollout\.maxTurns is deprecated: write rollout\.dialogue\.maxTurns/g)?.length, 1);
    assert.match(flat.stderr, /rollout\.dialogue\.maxTurns: /);
    const missing = await attune(
      ['rollout', '--scenario', 'no-such-scenario', '--scenarios', FIXTURE_SCENARIOS, ...set()],
      { TEMPORAL_ADDRESS: address },
    );
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /scenario "no-such-scenario" not found in .*fixtures\/scenarios/);
  });

  it('rejects a bad or clashing evaluation name and repeated scenario ids before any workflow starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attune-names-'));
    // An earlier evaluation whose report folder differs from the new name only in case.
    mkdirSync(join(dir, 'artifacts', 'evaluations', 'Clash-A'), { recursive: true });
    writeFileSync(join(dir, 'artifacts', 'evaluations', 'Clash-A', 'evaluation.json'), '{}');
    const env = { TEMPORAL_ADDRESS: address };
    const calls = fake.count();
    const run = (...args: string[]) =>
      attune(['eval', '--scenarios', FIXTURE_SCENARIOS, ...args, ...set(), '--set', `home=${dir}`], env);
    for (const [name, why] of [
      ['..', /--name "\.\.": "\.\." names a folder/],
      ['a/b', /--name "a\/b": must be a letter or digit/],
      ['x'.repeat(129), /129 characters long; at most 128/],
      ['clash-a', /--name "clash-a": evaluation "Clash-A" already has that report folder/],
    ] as const) {
      const result = await run('--name', name);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, why);
    }
    const twice = await run('--only', 'test-venting-negative-baker,test-venting-negative-baker');
    assert.notEqual(twice.code, 0);
    assert.match(twice.stderr, /scenario id "test-venting-negative-baker" is listed twice/);
    const badId = await attune(['rollout', '--scenario', '../x', '--scenarios', FIXTURE_SCENARIOS, ...set()], env);
    assert.equal(badId.code, 2);
    assert.match(badId.stderr, /--scenario "\.\.\/x": must be a lowercase letter or digit/);
    // Nothing ran: no dialogue reached the model.
    assert.equal(fake.count(), calls);
  });

  it('status of an unknown run says so', async () => {
    const result = await attune(['status', 'no-such-run', ...set()], { TEMPORAL_ADDRESS: address });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /train-no-such-run|not found/i);
  });
});
