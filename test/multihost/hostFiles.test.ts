import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostDir, hostTmpOutside, pathsKeptOnHosts } from './hostFiles.js';
import { HostProcess } from './hostProcess.js';
import { createNetwork, removeNetwork, type HostName } from './network.js';

/** A shell command on a host; its exit code and output. */
async function onHost(host: HostName, script: string, kept?: string[]): Promise<{ code: number | null; log: string }> {
  const p = new HostProcess(host, 'sh', ['sh', '-c', script], {}, kept).start();
  const code = await p.exitCode();
  return { code, log: p.log };
}

describe('hosts share no directory: each has its own /tmp, where its state lives', function () {
  before(() => createNetwork());
  after(() => removeNetwork());

  it("a host cannot read the trainer host's state directory; a second process on the trainer host can", async () => {
    const state = hostDir('trainer', 'trainer-state');
    const wrote = await onHost('trainer', `echo step-1 > ${state}/checkpoint`);
    assert.equal(wrote.code, 0, wrote.log);

    const sameHost = await onHost('trainer', `cat ${state}/checkpoint`);
    assert.deepEqual(sameHost, { code: 0, log: 'step-1\n' });

    for (const host of ['vllm-1', 'workers-a', 'client'] as const) {
      const other = await onHost(host, `cat ${state}/checkpoint`);
      assert.notEqual(other.code, 0, `${host} read the trainer host's ${state}/checkpoint: ${other.log}`);
      assert.match(other.log, /No such file or directory/);
      // nor through the directory the test keeps the trainer host's files in
      const outside = await onHost(host, `ls ${hostTmpOutside('trainer')}`);
      assert.notEqual(outside.code, 0, `${host} listed the trainer host's files: ${outside.log}`);
    }
  });

  it("attune's home is one path on every host and a different directory on each", async () => {
    const wrote = await onHost('workers-a', 'echo a > /tmp/attune-home/which');
    assert.equal(wrote.code, 0, wrote.log);
    const other = await onHost('workers-b', 'cat /tmp/attune-home/which');
    assert.notEqual(other.code, 0, `workers-b read workers-a's home: ${other.log}`);
  });

  it("a checkout under /tmp (a fresh clone there) stays visible on every host, beside the host's own /tmp", async () => {
    assert.deepEqual(pathsKeptOnHosts('/tmp/attune-clone'), ['/tmp/attune-clone']);
    assert.deepEqual(pathsKeptOnHosts('/work/attune'), []);
    // a stand-in for a clone under the real /tmp, kept as the checkout is when it lives there
    const checkout = mkdtempSync('/tmp/attune-mh-checkout-');
    try {
      writeFileSync(join(checkout, 'package.json'), '{"name":"attune"}\n');
      for (const host of ['vllm-1', 'workers-a'] as const) {
        const seen = await onHost(host, `cat ${checkout}/package.json && ls -d /tmp/attune-home`, [checkout]);
        assert.deepEqual(seen, { code: 0, log: '{"name":"attune"}\n/tmp/attune-home\n' }, `on ${host}`);
      }
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  });
});
