/** A progress line for a terminal: counts, a bar and an ETA from the rate observed so far. */

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

export function progressBar(done: number, total: number, width = 20): string {
  const share = total > 0 ? Math.min(1, Math.max(0, done / total)) : 0;
  const filled = Math.round(share * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
}

/** Observed progress: (time, done) samples; the ETA is the remaining count at the rate between the first and the last. */
export class RateEstimate {
  private first: { at: number; done: number } | null = null;
  private last: { at: number; done: number } | null = null;

  observe(at: number, done: number): void {
    // A count that falls (a new step begins) starts the estimate again.
    if (this.last === null || done < this.last.done) this.first = { at, done };
    this.last = { at, done };
  }

  /** Forgets what was observed (a new step counts from zero again). */
  reset(): void {
    this.first = null;
    this.last = null;
  }

  etaMs(total: number): number | null {
    if (!this.first || !this.last) return null;
    const progressed = this.last.done - this.first.done;
    const elapsed = this.last.at - this.first.at;
    if (progressed <= 0 || elapsed <= 0) return null;
    return ((total - this.last.done) * elapsed) / progressed;
  }
}

export interface ProgressLine {
  /** What the whole is, e.g. "step 2/4". */
  label: string;
  done: number;
  total: number;
  /** What is counted, e.g. "dialogues". */
  unit: string;
  etaMs: number | null;
  /** Extra state after the ETA, e.g. "1 failed, last reward 0.41". */
  detail?: string;
}

export function formatProgress(p: ProgressLine, barWidth = 20): string {
  const eta = p.etaMs === null ? 'ETA -' : `ETA ${formatDuration(p.etaMs)}`;
  return `${p.label} ${progressBar(p.done, p.total, barWidth)} ${p.done}/${p.total} ${p.unit}  ${eta}${p.detail ? `  ${p.detail}` : ''}`;
}

/**
 * Where progress goes: on a terminal one line redrawn in place (`\r`, clear line), otherwise a
 * plain line each time it changes, so a log file gets no control characters.
 */
export class ProgressDisplay {
  private lastLine = '';
  private drawn = false;

  constructor(
    private readonly out: { write(text: string): unknown; isTTY?: boolean } = process.stderr,
    private readonly plain: (line: string) => void = (line) => out.write(`${line}\n`),
  ) {}

  get isTerminal(): boolean {
    return this.out.isTTY === true;
  }

  show(line: string): void {
    if (line === this.lastLine) return;
    this.lastLine = line;
    if (this.isTerminal) {
      this.out.write(`\r\u001b[2K${line}`);
      this.drawn = true;
    } else this.plain(line);
  }

  /** Ends the redrawn line, so what follows starts on its own. */
  done(): void {
    if (this.drawn) this.out.write('\n');
    this.drawn = false;
  }
}
