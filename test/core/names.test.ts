import assert from 'node:assert/strict';
import {
  isValidName,
  isValidScenarioId,
  keyPart,
  nameProblem,
  NAME_MAX_LENGTH,
  namesClashingWith,
  storedNameKey,
} from '../../src/core/names.js';
import { scenarioSchema } from '../../src/core/scenario.js';
import { importSageJsonl } from '../../src/scenarios/importSage.js';

describe('core: names and scenario ids', () => {
  it('rejects ".", "..", empty, over-long and unsafe names, saying why', () => {
    assert.match(nameProblem('.') ?? '', /names a folder/);
    assert.match(nameProblem('..') ?? '', /names a folder/);
    assert.match(nameProblem('..', 'scenario id') ?? '', /not a scenario id/);
    assert.equal(nameProblem(''), 'is empty');
    assert.match(nameProblem('a'.repeat(NAME_MAX_LENGTH + 1)) ?? '', /129 characters long; at most 128/);
    assert.equal(nameProblem('a'.repeat(NAME_MAX_LENGTH)), null);
    for (const bad of ['a/b', '../x', '.hidden', '-x', 'a b', 'run@3', 'é', 'a\u001b[2J'])
      assert.ok(nameProblem(bad) !== null, bad);
    for (const good of ['tiny-1', 'Eval.2024_01', '0']) assert.equal(nameProblem(good), null, good);
  });

  it('holds scenario ids to the name rule in lower case', () => {
    assert.equal(nameProblem('eval-venting-1', 'scenario id'), null);
    assert.match(nameProblem('Eval-1', 'scenario id') ?? '', /lowercase/);
    assert.ok(!isValidScenarioId('a'.repeat(129)));
    // Every valid scenario id is a valid name and its own key part: two ids never share a file.
    for (const id of ['a', 'x.y_z-1', '0-0']) {
      assert.ok(isValidScenarioId(id) && isValidName(id));
      assert.equal(keyPart(id), id);
      assert.equal(storedNameKey(id), id);
    }
  });

  it('finds the names that would share a file or folder with a new one', () => {
    assert.deepEqual(namesClashingWith('Eval-1', ['eval-1', 'eval-2', 'Eval-1']), ['eval-1']);
    assert.deepEqual(namesClashingWith('a b', ['a_b', 'a-b']), ['a_b']);
    assert.deepEqual(namesClashingWith('x', []), []);
  });

  it('applies the rule in the scenario schema, naming the id field', () => {
    const result = scenarioSchema.safeParse({ id: 'x'.repeat(129) });
    assert.ok(!result.success);
    assert.ok(result.error.issues.some((issue) => issue.path.join('.') === 'id' && /at most 128/.test(issue.message)));
  });

  it('import: two SAGE ids that become one scenario id are refused, naming both and their lines', () => {
    const record = (id: string) =>
      JSON.stringify({
        id,
        player: 'A tired nurse.',
        scene: 'After a night shift.',
        task: 'Wants rest.',
        cha_group: ['负面'],
      });
    const { scenarios, problems } = importSageJsonl([record('Case 1'), record('case-1'), record('ok')].join('\n'), {
      prefix: 'sage',
    });
    assert.deepEqual(
      scenarios.map((s) => s.scenario.id),
      ['sage-case-1', 'sage-ok'],
    );
    assert.equal(problems.length, 1);
    assert.equal(problems[0]?.line, 2);
    assert.match(
      problems[0]?.message ?? '',
      /"case-1" becomes scenario id "sage-case-1", as does id "Case 1" on line 1/,
    );
  });
});
