import { readFileSync, writeFileSync } from 'node:fs';

/** Linux /proc readers for one process: peak and current RSS, CPU time. Linux only; null elsewhere. */

function statusField(pid: number, field: string): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** Peak resident set size (VmHWM) in MiB since start or since the last `resetPeakRss`. */
export function peakRssMb(pid: number): number | null {
  const kb = statusField(pid, 'VmHWM');
  return kb === null ? null : Math.round((kb / 1024) * 10) / 10;
}

export function rssMb(pid: number): number | null {
  const kb = statusField(pid, 'VmRSS');
  return kb === null ? null : Math.round((kb / 1024) * 10) / 10;
}

/** Resets VmHWM to the current RSS (`echo 5 > /proc/PID/clear_refs`), so a peak can be measured per phase. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const CLOCK_TICKS = 100;

/** User + system CPU seconds the process has used (all threads). */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may contain spaces.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(rest[11]);
    const stime = Number(rest[12]);
    return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) / CLOCK_TICKS : null;
  } catch {
    return null;
  }
}

/** CPU seconds all processes on the machine have used (all cores, from /proc/stat), to see what else ran. */
export function systemBusySeconds(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    const busy = [user, nice, system, irq, softirq, steal].reduce<number>((a, b) => a + (b ?? 0), 0);
    return Number.isFinite(busy) ? busy / CLOCK_TICKS : null;
  } catch {
    return null;
  }
}
