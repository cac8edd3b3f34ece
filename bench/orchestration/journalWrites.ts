/**
 * CPU and wall time of one conditional write of the directory store (`putJsonIf`), the write a
 * turn journal makes after each finished LLM call (durable) and for each claim (not durable), with
 * several keys written at once as dialogues do. Prints its figures; not a timed test.
 *
 *   node --import tsx bench/orchestration/journalWrites.ts [--writes N] [--keys K] [--dir DIR] [--rounds R]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FileArtifactStore } from '../../src/artifacts/store.js';

const HELP = `CPU and wall time per conditional write of the directory artifact store (the turn journal's write).

Usage: node --import tsx bench/orchestration/journalWrites.ts [options]

  --writes N   writes per measurement (default 4000; a tenth of that for durable writes)
  --keys K     keys written at once, one chain of compare-and-swap writes each (default 16)
  --dir DIR    a directory to write under, e.g. on the journal's real disk (default the system's
               temporary directory); a fresh subdirectory is made and removed
  --rounds R   measurements of each kind, printed one per line (default 3)
  --help       this text`;

/** A record about the size of a turn's after its policy call. */
const record = (i: number) => ({
  input: 'a'.repeat(64),
  attempt: { epoch: 1, token: 'b'.repeat(36) },
  finished: { policy: { raw: 'c'.repeat(1500), reply: 'd'.repeat(800), i } },
});

async function measure(store: FileArtifactStore, writes: number, keys: number, durable: boolean) {
  const prefix = `journal/bench-${Math.random().toString(36).slice(2)}`;
  const perKey = Math.max(1, Math.floor(writes / keys));
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: keys }, async (_, k) => {
      let version: string | null = null;
      for (let i = 0; i < perKey; i++) {
        version = await store.putJsonIf(`${prefix}/turn-${k}.json`, record(i), version, { durable });
        if (version === null) throw new Error('a conditional write lost to nobody: the store is broken');
      }
    }),
  );
  const cpu = process.cpuUsage(c0);
  const done = perKey * keys;
  return {
    cpuUs: (cpu.user + cpu.system) / done,
    wallUs: ((performance.now() - t0) * 1000) / done,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      writes: { type: 'string', default: '4000' },
      keys: { type: 'string', default: '16' },
      dir: { type: 'string' },
      rounds: { type: 'string', default: '3' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const writes = Number(values.writes);
  const keys = Number(values.keys);
  const rounds = Number(values.rounds);
  for (const [name, n] of [
    ['--writes', writes],
    ['--keys', keys],
    ['--rounds', rounds],
  ] as const)
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: a positive integer`);
  const root = mkdtempSync(join(values.dir ?? tmpdir(), 'attune-journal-writes-'));
  try {
    const store = new FileArtifactStore(root);
    await measure(store, 200, keys, false); // warm-up: code compiled, directories made
    console.log(`${keys} keys at once, under ${root}`);
    for (let round = 1; round <= rounds; round++) {
      const loose = await measure(store, writes, keys, false);
      const durable = await measure(store, Math.max(keys, Math.floor(writes / 10)), keys, true);
      console.log(
        `round ${round}: not durable ${loose.cpuUs.toFixed(0)} µs CPU, ${loose.wallUs.toFixed(0)} µs wall a write; ` +
          `durable ${durable.cpuUs.toFixed(0)} µs CPU, ${durable.wallUs.toFixed(0)} µs wall a write`,
      );
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
