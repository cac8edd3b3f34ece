import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const run = (args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'bench/orchestration/journalWrites.ts', ...args], {
    encoding: 'utf8',
  });

describe('bench/orchestration/journalWrites.ts: the cost of one conditional write of the directory store', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'attune-journal-writes-test-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('prints CPU and wall time a write, durable and not, for each round, and removes what it wrote', () => {
    const result = run(['--writes', '64', '--keys', '4', '--rounds', '2', '--dir', dir]);
    assert.equal(result.status, 0, result.stderr);
    const rounds = result.stdout.split('\n').filter((line) => line.startsWith('round '));
    assert.equal(rounds.length, 2, result.stdout);
    for (const line of rounds)
      assert.match(line, /not durable \d+ µs CPU, \d+ µs wall a write; durable \d+ µs CPU, \d+ µs wall a write$/);
    assert.deepEqual(readdirSync(dir), []);
  });

  it('--help says how to run it; a bad count fails naming its flag', () => {
    const help = run(['--help']);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /--writes N/);
    const bad = run(['--keys', '0', '--dir', dir]);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /--keys: a positive integer/);
  });
});
