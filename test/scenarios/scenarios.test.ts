import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GOAL_TYPES, PERSONALITY_TYPES } from '../../src/core/scenario.js';
import { importSageJsonl } from '../../src/scenarios/importSage.js';
import { loadScenarioLibrary } from '../../src/scenarios/library.js';
import { REPO_ROOT } from '../../src/paths.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const CLI = join(REPO_ROOT, 'bin', 'attune.js');
function attune(...args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: REPO_ROOT });
}

describe('scenario library', () => {
  it('covers every goal type x personality in both splits, with valid files', () => {
    for (const split of ['train', 'eval']) {
      const { scenarios, problems } = loadScenarioLibrary(join(REPO_ROOT, 'scenarios', split));
      assert.deepEqual(problems, []);
      for (const goal of GOAL_TYPES)
        for (const personality of PERSONALITY_TYPES) {
          assert.ok(
            scenarios.some((s) => s.goalType === goal && s.personality === personality),
            `${split} lacks ${goal} x ${personality}`,
          );
        }
    }
    const all = loadScenarioLibrary(join(REPO_ROOT, 'scenarios'));
    assert.ok(all.scenarios.length >= 48);
    assert.equal(
      new Set(all.scenarios.map((s) => s.persona.name)).size,
      all.scenarios.length,
      'every scenario is a different person',
    );
  });

  it('validate names the file and the field of each problem', () => {
    const dir = mkdtempSync(join(tmpdir(), 'attune-scn-'));
    cpSync(FIXTURE_SCENARIOS, dir, { recursive: true });
    const bad = join(dir, 'test-venting-negative-baker.yaml');
    writeFileSync(
      bad,
      readFileSync(bad, 'utf8')
        .replace('personality: negative', 'personality: grumpy')
        .replace('goalType: venting', 'goalType: venting\nmood: bad'),
    );
    const result = attune('scenarios', 'validate', dir);
    assert.equal(result.status, 1);
    assert.match(result.stderr, /test-venting-negative-baker\.yaml: personality: Invalid option/);
    assert.match(result.stderr, /test-venting-negative-baker\.yaml: mood: unknown key/);
    const ok = attune('scenarios', 'validate', FIXTURE_SCENARIOS);
    assert.equal(ok.status, 0);
    assert.match(ok.stdout, /2 valid scenario/);
  });

  it('list --json gives id, language and goal type', () => {
    const result = attune('scenarios', 'list', FIXTURE_SCENARIOS, '--json');
    assert.equal(result.status, 0, result.stderr);
    const rows = JSON.parse(result.stdout) as { id: string; language: string; goalType: string }[];
    assert.deepEqual(
      rows.map((r) => [r.id, r.language, r.goalType]),
      [
        ['test-not-my-fault-avoidant-cyclist', 'en', 'not-my-fault'],
        ['test-venting-negative-baker', 'en', 'venting'],
      ],
    );
  });
});

describe('SAGE / RLVER import', () => {
  const file = join(__dirname, '..', 'fixtures', 'sage', 'profiles.jsonl');

  it('imports every good record without loss and reports bad lines by number', () => {
    const result = importSageJsonl(readFileSync(file, 'utf8'), { file: 'profiles.jsonl' });
    assert.deepEqual(
      result.scenarios.map((s) => [s.scenario.id, s.line]),
      [
        ['sage-p-001', 1],
        ['sage-2', 2],
        ['sage-p-004', 5],
      ],
    );
    assert.deepEqual(
      result.problems.map((p) => p.line),
      [3, 4],
    );
    assert.match(result.problems[0]?.message ?? '', /task/);
    const first = result.scenarios[0]!.scenario;
    assert.equal(first.language, 'zh');
    assert.equal(first.personality, 'negative');
    assert.equal(first.firstMessage, '今天真是够了，又是我背锅。');
    assert.equal(first.persona.description, '李明，32岁，程序员，说话简短，常加班。');
    const second = result.scenarios[1]!.scenario;
    assert.equal(second.personality, 'passive');
    assert.equal(
      second.firstMessage,
      undefined,
      'RLVER training profiles have no first_talk: the simulator writes the opening',
    );
    const fourth = result.scenarios[2]!.scenario;
    assert.equal(fourth.personality, 'avoidant');
    // Every original field survives verbatim, unknown ones included.
    const originals = readFileSync(file, 'utf8').split('\n');
    assert.deepEqual(fourth.source?.record, JSON.parse(originals[4]!));
  });

  it('reads a file that starts with a byte-order mark', () => {
    const result = importSageJsonl('\uFEFF{"id":"a","player":"p","scene":"s","task":"t"}\n');
    assert.deepEqual(result.problems, []);
    assert.equal(result.scenarios[0]?.scenario.id, 'sage-a');
  });
  it('names the SAGE field of a blank text, not the scenario field it becomes', () => {
    const result = importSageJsonl('{"id":"a","player":"\\t\\n","scene":"s","task":"t"}');
    assert.deepEqual(result.problems, [{ line: 1, message: 'player: must not be empty' }]);
  });
  it('the CLI writes valid scenario files and exits non-zero on bad lines', () => {
    const out = mkdtempSync(join(tmpdir(), 'attune-import-'));
    const result = attune('scenarios', 'import', '--format', 'sage', file, '--out', out);
    assert.equal(result.status, 1);
    assert.match(result.stdout, /imported 3 scenario\(s\).*2 bad line/);
    assert.match(result.stderr, /profiles\.jsonl:3: /);
    assert.match(result.stderr, /profiles\.jsonl:4: not valid JSON/);
    const validate = attune('scenarios', 'validate', out);
    assert.equal(validate.status, 0, validate.stderr);
  });
});
