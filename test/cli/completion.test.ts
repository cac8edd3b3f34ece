import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { completionEntries } from '../../src/cli/main.js';
import { attune } from './attuneProcess.js';

function scriptFile(shell: string, text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'attune-completion-')), `attune.${shell}`);
  writeFileSync(file, text);
  return file;
}

/** What bash completes for the words typed so far (the last one being completed). */
function bashCompletes(script: string, typed: string[]): string[] {
  const words = typed.map((w) => `'${w}'`).join(' ');
  const result = spawnSync(
    'bash',
    [
      '-c',
      `source '${script}'; COMP_WORDS=(${words}); COMP_CWORD=${typed.length - 1}; _attune; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.split('\n').filter((l) => l !== '');
}

describe('attune completion', function () {
  this.timeout(60_000);

  it('bash: a script bash -n accepts, completing commands, subcommands, flags and --log-format values', async () => {
    const result = await attune(['completion', 'bash']);
    assert.equal(result.code, 0, result.stderr);
    const script = scriptFile('bash', result.stdout);
    const check = spawnSync('bash', ['-n', script], { encoding: 'utf8' });
    assert.equal(check.status, 0, check.stderr);
    assert.deepEqual(bashCompletes(script, ['attune', 'sch']), ['schedule']);
    assert.deepEqual(bashCompletes(script, ['attune', 're']), ['report', 'resume']);
    assert.deepEqual(bashCompletes(script, ['attune', 'schedule', 'un']), ['unpause']);
    assert.deepEqual(bashCompletes(script, ['attune', 'train', '--de']), ['--detach']);
    assert.deepEqual(bashCompletes(script, ['attune', 'status', '--log-format', '']), ['human', 'json']);
    // Completion offers the flags each command accepts, and none it rejects.
    assert.ok(bashCompletes(script, ['attune', 'eval', '--']).includes('--repeats'));
    assert.deepEqual(bashCompletes(script, ['attune', 'rollouts', '--w']), ['--waiting']);
    assert.deepEqual(bashCompletes(script, ['attune', 'rollouts', 'l']), ['list']);
    const codec = bashCompletes(script, ['attune', 'codec-server', '--']);
    assert.ok(!codec.includes('--codec-endpoint') && !codec.includes('--codec-auth'), codec.join(' '));
    // Every command of the table completes from its first letters.
    for (const { name } of completionEntries())
      assert.ok(bashCompletes(script, ['attune', name.slice(0, 3)]).includes(name), name);
  });

  it('zsh: a script zsh -n accepts, naming every command', async () => {
    assert.ok(!spawnSync('zsh', ['--version']).error, 'zsh is not installed (scripts/setup.sh installs it as root)');
    const result = await attune(['completion', 'zsh']);
    assert.equal(result.code, 0, result.stderr);
    const check = spawnSync('zsh', ['-n', scriptFile('zsh', result.stdout)], { encoding: 'utf8' });
    assert.equal(check.status, 0, check.stderr);
    for (const { name } of completionEntries()) assert.ok(result.stdout.includes(name), name);
  });

  it('has --help and names an unknown shell', async () => {
    const help = await attune(['completion', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /attune completion bash\|zsh/);
    const bad = await attune(['completion', 'fish']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /attune completion: unknown shell "fish": one of bash, zsh/);
  });
});
