import { readdirSync, readFileSync } from 'node:fs';
import { peakRssMb, resetPeakRss, systemBusySeconds } from '../orchestration/procfs.js';

/**
 * CPU time of process trees from /proc (Linux only; null elsewhere). A tree's CPU is the sum, over
 * its root and every live descendant, of the process's own user + system time and the time of its
 * children it has reaped (cutime + cstime). Each process's CPU is so counted once: in itself while it
 * lives, in its parent once reaped. A delta between two snapshots is then the tree's CPU over the
 * interval, backends that started or exited in between included (PostgreSQL's postmaster reaps its
 * backends, autovacuum workers and parallel workers).
 */

const CLOCK_TICKS = 100;

interface ProcEntry {
  ppid: number;
  /** utime + stime + cutime + cstime, seconds. */
  cpuS: number;
}

function readProc(pid: number): ProcEntry | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may contain spaces: state ppid ... utime(11) stime cutime cstime.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].map((i) => Number(rest[i]));
    if (ticks.some((t) => !Number.isFinite(t))) return null;
    return { ppid: Number(rest[1]), cpuS: ticks.reduce((a, b) => a + b, 0) / CLOCK_TICKS };
  } catch {
    return null;
  }
}

function allProcesses(): Map<number, ProcEntry> {
  const out = new Map<number, ProcEntry>();
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const entry = readProc(Number(name));
    if (entry) out.set(Number(name), entry);
  }
  return out;
}

/** CPU seconds of each group of process trees (by root pids), read in one pass over /proc; null for a group whose root is gone. */
export function treeCpuSeconds<K extends string>(groups: Record<K, number[]>): Record<K, number | null> {
  const procs = allProcesses();
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of procs) {
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  const tree = (root: number): number | null => {
    if (!procs.has(root)) return null;
    let total = 0;
    const stack = [root];
    const seen = new Set<number>();
    while (stack.length > 0) {
      const pid = stack.pop()!;
      if (seen.has(pid)) continue;
      seen.add(pid);
      total += procs.get(pid)?.cpuS ?? 0;
      stack.push(...(children.get(pid) ?? []));
    }
    return total;
  };
  const out = {} as Record<K, number | null>;
  for (const key of Object.keys(groups) as K[]) {
    let sum: number | null = 0;
    for (const root of groups[key]) {
      const value = tree(root);
      sum = value === null || sum === null ? null : sum + value;
    }
    out[key] = sum;
  }
  return out;
}

/** The process groups whose CPU the run reports. */
export interface ProcessGroups {
  temporal: number[];
  database: number[];
  workers: number[];
}

export interface CpuSnapshot {
  groups: Record<keyof ProcessGroups, number | null>;
  /** This process: the fake LLM server and the starter. */
  bench: number;
  /** Every process on the machine (all cores). */
  machine: number | null;
}

export function cpuSnapshot(groups: ProcessGroups): CpuSnapshot {
  const usage = process.cpuUsage();
  return {
    groups: treeCpuSeconds({ ...groups }),
    bench: (usage.user + usage.system) / 1e6,
    machine: systemBusySeconds(),
  };
}

const minus = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : a - b);

/** CPU seconds used between two snapshots. */
export function cpuDelta(from: CpuSnapshot, to: CpuSnapshot): CpuSnapshot {
  return {
    groups: {
      temporal: minus(to.groups.temporal, from.groups.temporal),
      database: minus(to.groups.database, from.groups.database),
      workers: minus(to.groups.workers, from.groups.workers),
    },
    bench: to.bench - from.bench,
    machine: minus(to.machine, from.machine),
  };
}

/** Resets the peak RSS (VmHWM) of each process, so the run's peak can be read afterwards. */
export function resetPeaks(pids: number[]): boolean {
  return pids.map(resetPeakRss).every(Boolean);
}

export function peaksMb(pids: number[]): (number | null)[] {
  return pids.map(peakRssMb);
}

/** The command name of a process (/proc/PID/comm), to show what a pid file pointed at. */
export function commandName(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return null;
  }
}
