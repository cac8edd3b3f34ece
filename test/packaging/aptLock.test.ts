import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';

/**
 * scripts/apt.sh's apt_get waits while another apt-get or dpkg holds apt's lock, and gives up with a message after
 * ATTUNE_APT_LOCK_TIMEOUT. Real apt-get, pointed by APT_CONFIG at a copy of dpkg's status file and its own lock
 * files: nothing is installed and the machine's own locks are never touched. A second process holds the lock as
 * apt and dpkg do (an fcntl lock) until the test lets it go.
 */

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

class Running {
  stdout = '';
  stderr = '';
  readonly done: Promise<Finished>;

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    const started = Date.now();
    child.stdout.on('data', (d: Buffer) => (this.stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.done = new Promise((resolve) =>
      child.on('close', (code) =>
        resolve({ code, stdout: this.stdout, stderr: this.stderr, ms: Date.now() - started }),
      ),
    );
  }

  /** Resolves when the output so far matches, rejects when the process ends first. */
  async until(pattern: RegExp): Promise<void> {
    const seen = () => pattern.test(this.stdout + this.stderr);
    if (seen()) return;
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!seen()) return;
        this.child.stdout.off('data', check);
        this.child.stderr.off('data', check);
        resolve();
      };
      this.child.stdout.on('data', check);
      this.child.stderr.on('data', check);
      void this.done.then((f) => reject(new Error(`exited ${f.code} before ${pattern}:\n${f.stdout}\n${f.stderr}`)));
    });
  }
}

const HOLD_LOCK = `
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
`;

/** Holds an fcntl lock on `path` until release(). */
async function holdLock(path: string): Promise<{ release: () => Promise<void> }> {
  const holder = new Running(spawn('python3', ['-c', HOLD_LOCK, path]));
  await holder.until(/held/);
  return {
    release: async () => {
      holder.child.stdin.end();
      await holder.done;
    },
  };
}

describe('apt_get (scripts/apt.sh): set-up waits for another apt', function () {
  this.timeout(120_000);
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'attune-apt-'));
    for (const sub of ['dpkg', 'state/lists/partial', 'cache/archives/partial', 'sources.list.d']) {
      mkdirSync(join(dir, sub), { recursive: true });
    }
    copyFileSync('/var/lib/dpkg/status', join(dir, 'dpkg/status'));
    writeFileSync(join(dir, 'sources.list'), '');
    writeFileSync(
      join(dir, 'apt.conf'),
      [
        `Dir::State "${dir}/state/";`,
        `Dir::State::status "${dir}/dpkg/status";`,
        `Dir::Cache "${dir}/cache/";`,
        `Dir::Etc::sourcelist "${dir}/sources.list";`,
        `Dir::Etc::sourceparts "${dir}/sources.list.d/";`,
        '',
      ].join('\n'),
    );
    env = { ...process.env, APT_CONFIG: join(dir, 'apt.conf') };
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function aptGet(args: string, timeoutSeconds: number): Running {
    const script = `. scripts/apt.sh && apt_get ${args}`;
    return new Running(
      spawn('bash', ['-c', script], {
        cwd: REPO_ROOT,
        env: { ...env, ATTUNE_APT_LOCK_TIMEOUT: String(timeoutSeconds) },
      }),
    );
  }

  // an install of a package that is already installed: takes dpkg's lock, changes nothing
  const install = 'install -y --no-download bash';

  it("waits while another process holds dpkg's lock, then installs", async () => {
    const lock = await holdLock(join(dir, 'dpkg/lock-frontend'));
    const apt = aptGet(install, 60);
    await apt.until(/Waiting for cache lock: Could not get lock/);
    await lock.release();
    const result = await apt.done;
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /bash is already the newest version/);
  });

  it("waits while another `apt-get update` holds the lists' lock, then updates", async () => {
    const lock = await holdLock(join(dir, 'state/lists/lock'));
    const apt = aptGet('update', 60);
    await apt.until(/\[apt\] another apt-get or dpkg holds apt's lock: waiting for it \(at most 60 s\)/);
    await lock.release();
    const result = await apt.done;
    assert.equal(result.code, 0, result.stdout + result.stderr);
  });

  it('gives up no sooner than ATTUNE_APT_LOCK_TIMEOUT wherever in a second it starts (late in one, with the lists lock held)', async () => {
    // Started in the last 30 ms of a wall-clock second, two quick failures of `apt-get update` 2 s apart
    // cross into the third second after about 2.05 s: a deadline kept in bash's whole SECONDS gave up there.
    const lock = await holdLock(join(dir, 'state/lists/lock'));
    try {
      const late = 'while (( 10#${EPOCHREALTIME: -6} < 970000 )); do :; done; started=${EPOCHREALTIME//[!0-9]/}';
      const script = `${late}; . scripts/apt.sh; apt_get update; status=$?; echo "elapsed_us=$((\${EPOCHREALTIME//[!0-9]/} - started))"; exit $status`;
      const result = await new Running(
        spawn('bash', ['-c', script], { cwd: REPO_ROOT, env: { ...env, ATTUNE_APT_LOCK_TIMEOUT: '3' } }),
      ).done;
      assert.equal(result.code, 100, result.stdout + result.stderr);
      assert.match(result.stderr, /\[apt\] gave up after 3 s/);
      const elapsedUs = Number(/elapsed_us=(\d+)/.exec(result.stdout)?.[1]);
      assert.ok(elapsedUs >= 3_000_000, `gave up after ${elapsedUs / 1000} ms, before the 3 s timeout`);
    } finally {
      await lock.release();
    }
  });

  it('gives up with a message when the lock stays held past ATTUNE_APT_LOCK_TIMEOUT', async () => {
    const lock = await holdLock(join(dir, 'dpkg/lock-frontend'));
    try {
      const result = await aptGet(install, 3).done;
      assert.equal(result.code, 100, result.stdout + result.stderr);
      assert.ok(result.ms >= 3000, `gave up after ${result.ms} ms, before the 3 s timeout`);
      assert.match(
        result.stderr,
        /\[apt\] gave up after 3 s: another apt-get or dpkg held apt's lock all that time\. .*ATTUNE_APT_LOCK_TIMEOUT=<seconds>/,
      );
    } finally {
      await lock.release();
    }
  });
});
