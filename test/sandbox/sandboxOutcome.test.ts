import assert from 'node:assert/strict';
import { OutputTail } from '../../src/sandbox/outputTail.js';
import { classifyEnding, type LauncherEnding } from '../../src/sandbox/sandboxOutcome.js';

const names = (signal: number): string => ({ 9: 'SIGKILL', 24: 'SIGXCPU' })[signal] ?? `signal ${signal}`;

function finished(fields: Record<string, unknown>): LauncherEnding {
  const report = { kind: 'finished', applied: ['rlimit:cpu=1s'], exitCode: null, signal: null, backstopFired: false };
  return {
    deadlineReached: false,
    reportText: JSON.stringify({ ...report, cpuMs: 5, maxRssKiB: 9000, ...fields }),
    launcherExitCode: 0,
    launcherSignal: null,
  };
}

describe('sandbox: outcome of a run', () => {
  it('passes only an exit code of 0', () => {
    assert.equal(classifyEnding(finished({ exitCode: 0 }), names).outcome, 'passed');
    assert.equal(classifyEnding(finished({ exitCode: 1 }), names).outcome, 'failed');
    assert.equal(classifyEnding(finished({ exitCode: 0, backstopFired: true }), names).outcome, 'timeout');
  });

  it('names the signal that killed the program', () => {
    const ending = classifyEnding(finished({ signal: 24 }), names);
    assert.deepEqual([ending.outcome, ending.signal, ending.exitCode], ['killed', 'SIGXCPU', null]);
  });

  it('is a timeout when the supervisor reached the deadline, whatever the report says', () => {
    const ending = classifyEnding({ ...finished({ exitCode: 0 }), deadlineReached: true }, names);
    assert.deepEqual([ending.outcome, ending.signal], ['timeout', 'SIGKILL']);
  });

  it('is a sandbox error when the launcher failed to set up, wrote no report or a malformed one', () => {
    const setup = { kind: 'setup-failed', error: 'mount tmpfs on /tmp: Operation not permitted', applied: [] };
    const cases: [LauncherEnding, RegExp][] = [
      [{ ...finished({}), reportText: JSON.stringify(setup) }, /mount tmpfs/],
      [{ ...finished({}), reportText: '', launcherExitCode: 1 }, /exit code 1\) without a report/],
      [{ ...finished({}), reportText: '{"kind":"finished"}' }, /malformed report/],
      [{ ...finished({}), reportText: 'Traceback', launcherSignal: 'SIGSEGV' }, /SIGSEGV.*not JSON/],
      [{ ...finished({}), spawnError: 'could not start unshare: ENOENT' }, /ENOENT/],
    ];
    for (const [ending, reason] of cases) {
      const classified = classifyEnding(ending, names);
      assert.equal(classified.outcome, 'sandbox-error');
      assert.match(classified.sandboxError ?? '', reason);
    }
  });
});

describe('sandbox: output tail', () => {
  it('keeps the last bytes up to the cap and counts them all', () => {
    const tail = new OutputTail(8);
    tail.push(Buffer.from('abcdef'));
    assert.deepEqual([tail.text(), tail.truncated], ['abcdef', false]);
    tail.push(Buffer.from('ghij'));
    assert.deepEqual([tail.text(), tail.totalBytes, tail.truncated], ['cdefghij', 10, true]);
    tail.push(Buffer.from('0123456789XY'));
    assert.deepEqual([tail.text(), tail.totalBytes], ['456789XY', 22]);
  });
});
