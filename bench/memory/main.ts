/**
 * Peak resident memory of `attune demo` (or any attune command), per process and for the whole
 * process tree, sampled from /proc (Linux only).
 *
 *   npm run bench:memory [-- --fresh] [-- --out FILE] [-- -- demo --steps 1]
 *
 * `--fresh` gives the command a new, empty ATTUNE_HOME, so the first-run work (the model's
 * conversion, the trainer's first load) is measured too. Each process's peak is its VmHWM, read
 * every 250 ms until it exits; the tree's peak is the largest sum of VmRSS over one sample.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../../src/paths.js';
import { defaultResultsFile } from '../resultsFile.js';
import { peakRssMb, rssMb } from '../orchestration/procfs.js';

const HELP = `npm run bench:memory [-- options] [-- -- ATTUNE ARGS]

Runs \`attune ATTUNE ARGS\` (default: demo --steps 1) and prints the peak resident memory of each
process it starts and of the whole tree.

  --fresh       a new, empty ATTUNE_HOME (first-run conversion and loads included)
  --out FILE    results (default bench/results/memory-demo.json, memory-demo-fresh.json with --fresh)
  --help        this text`;

interface Peak {
  pid: number;
  command: string;
  peakMb: number;
}

/** Every live pid whose parent chain reaches `root`. */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(entry), Number(fields[1]));
    } catch {
      // The process ended while the table was read.
    }
  }
  const out: number[] = [];
  for (const pid of parent.keys()) {
    let at: number | undefined = pid;
    for (let hops = 0; at !== undefined && at > 1 && hops < 64; hops++) {
      if (at === root) {
        out.push(pid);
        break;
      }
      at = parent.get(at);
    }
  }
  return out;
}

/** A short name for a process: the executable and the argument that tells what it is. */
function commandOf(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const exe = (argv[0] ?? '?').split('/').pop() ?? '?';
    const what = argv.slice(1).find((a) => !a.startsWith('-') && !a.startsWith('import=')) ?? '';
    const sub = argv.find((a) => /^(serve|server|start-dev|demo|worker)$/.test(a));
    return [exe, what.split('/').slice(-2).join('/'), sub].filter(Boolean).join(' ').slice(0, 80);
  } catch {
    return '?';
  }
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { fresh: { type: 'boolean', default: false }, out: { type: 'string' }, help: { type: 'boolean' } },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const args = positionals.length > 0 ? positionals : ['demo', '--steps', '1'];
  const out = resolve(values.out ?? defaultResultsFile('memory', values.fresh ? 'demo-fresh' : 'demo'));
  const home = values.fresh ? mkdtempSync(join(tmpdir(), 'attune-memory-home-')) : undefined;
  const env = { ...process.env, ...(home ? { ATTUNE_HOME: home } : {}) };
  const started = Date.now();
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'attune.js'), ...args], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const root = child.pid!;
  const peaks = new Map<number, Peak>();
  let treePeakMb = 0;
  let treePeakAtS = 0;
  const sample = () => {
    let total = 0;
    for (const pid of [root, ...descendants(root)]) {
      const peak = peakRssMb(pid);
      const now = rssMb(pid);
      if (peak === null || now === null) continue;
      total += now;
      const known = peaks.get(pid);
      if (!known) peaks.set(pid, { pid, command: commandOf(pid), peakMb: peak });
      else known.peakMb = Math.max(known.peakMb, peak);
    }
    if (total > treePeakMb) {
      treePeakMb = Math.round(total);
      treePeakAtS = Math.round((Date.now() - started) / 1000);
    }
  };
  const timer = setInterval(sample, 250);
  const code = await new Promise<number>((done) => child.on('exit', (c) => done(c ?? 1)));
  clearInterval(timer);
  const wallS = Math.round((Date.now() - started) / 1000);
  const ranked = [...peaks.values()].filter((p) => p.peakMb >= 50).sort((a, b) => b.peakMb - a.peakMb);
  process.stdout.write(`\nattune ${args.join(' ')}${home ? ' (fresh ATTUNE_HOME)' : ''}: exit ${code}, ${wallS} s\n`);
  process.stdout.write(`peak of the whole tree: ${(treePeakMb / 1024).toFixed(2)} GiB at ${treePeakAtS} s\n`);
  process.stdout.write('peak per process (>= 50 MiB):\n');
  for (const p of ranked) process.stdout.write(`  ${(p.peakMb / 1024).toFixed(2).padStart(6)} GiB  ${p.command}\n`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ command: `attune ${args.join(' ')}`, fresh: values.fresh, exitCode: code, wallS, treePeakMb, treePeakAtS, processes: ranked }, null, 2)}\n`,
  );
  process.stdout.write(`results: ${out}\n`);
  if (home) rmSync(home, { recursive: true, force: true });
  return code;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench:memory: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
