import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandFlagTables, completionEntries, main } from '../../src/cli/main.js';
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

/** `attune ARGV` in this process (parsing and --help only, so nothing starts): its exit code and output. */
async function inProcess(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = { stdout: '', stderr: '' };
  const writes = { stdout: process.stdout.write, stderr: process.stderr.write };
  const capture = (stream: 'stdout' | 'stderr') =>
    ((chunk: string | Uint8Array) => {
      out[stream] += String(chunk);
      return true;
    }) as typeof process.stdout.write;
  process.stdout.write = capture('stdout');
  process.stderr.write = capture('stderr');
  try {
    return { code: await main(argv), ...out };
  } finally {
    process.stdout.write = writes.stdout;
    process.stderr.write = writes.stderr;
  }
}

/** The long flags of each command as its parsers declare them, the union over its subcommands. */
function declaredFlags(): Map<string, Set<string>> {
  const flags = new Map<string, Set<string>>();
  for (const { command, flags: table } of commandFlagTables())
    for (const name of Object.keys(table)) flags.set(command, (flags.get(command) ?? new Set()).add(`--${name}`));
  return flags;
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

  it('offers, for every command, exactly the flags its parsers declare', async () => {
    const script = scriptFile('bash', (await attune(['completion', 'bash'])).stdout);
    const declared = declaredFlags();
    assert.deepEqual(
      [...declared.keys()].sort(),
      completionEntries()
        .map((c) => c.name)
        .sort(),
    );
    for (const { name, subcommands } of completionEntries()) {
      const offered = bashCompletes(script, ['attune', name, '--']).sort();
      const expected = [...new Set([...declared.get(name)!, '--help', '--log-format'])].sort();
      assert.deepEqual(offered, expected, name);
      assert.deepEqual(bashCompletes(script, ['attune', name, '']).sort(), [...subcommands, ...expected].sort(), name);
    }
    // The flags of the issue that found completion and the parsers apart.
    assert.ok(declared.get('eval')!.has('--repeats'));
    assert.ok(!declared.get('codec-server')!.has('--codec-endpoint'));
    assert.ok(!declared.get('codec-server')!.has('--codec-auth'));
  });

  it('every flag a command declares, its parser accepts and its --help names; every other it refuses', async () => {
    const declared = declaredFlags();
    // Every flag of any command, and ones no command should take (the other side's codec flags).
    const strangers = ['--no-such-flag', '--codec-endpoint', '--codec-auth'];
    const everyFlag = new Set([...[...declared.values()].flatMap((f) => [...f]), ...strangers]);
    for (const { command, words, flags } of commandFlagTables()) {
      const where = ['attune', command, ...words].join(' ');
      assert.ok('help' in flags, `${where} has no --help`);
      const help = await inProcess([command, ...words, '--help']);
      assert.equal(help.code, 0, `${where} --help: ${help.stderr}`);
      for (const [name, flag] of Object.entries(flags)) {
        assert.ok(help.stdout.includes(`--${name}`), `${where} --help does not name --${name}`);
        if (flag.short) assert.ok(help.stdout.includes(`-${flag.short}, --${name}`), `${where} --help: -${flag.short}`);
        const value = flag.type === 'string' ? ['x'] : [];
        for (const spelling of [`--${name}`, ...(flag.short ? [`-${flag.short}`] : [])]) {
          const result = await inProcess([command, ...words, spelling, ...value, '--help']);
          assert.equal(result.code, 0, `${where} ${spelling}: ${result.stderr}`);
          assert.equal(result.stderr, '', `${where} ${spelling}`);
        }
      }
      for (const flag of [...everyFlag].filter((f) => !declared.get(command)!.has(f))) {
        // Last, so that a string flag cannot take --help for its value.
        const result = await inProcess([command, ...words, '--help', flag]);
        assert.equal(result.code, 2, `${where} accepts ${flag}, which completion does not offer`);
        assert.match(result.stderr, new RegExp(`Unknown option '${flag}'|${flag} belongs to`), where);
      }
    }
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
