import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import type { Entry } from './entry.js';
import type { Options } from './options.js';

/** The results: the JSON file (merged with an earlier one under --update) and the table on stdout. */

function fmt(value: number | null | boolean, digits = 2): string {
  if (value === null || typeof value === 'boolean') return value === null ? '-' : String(value);
  if (!Number.isFinite(value)) return '-';
  return value.toFixed(digits);
}

function table(entries: Entry[]): string {
  const header = [
    'L ms',
    'C',
    'attune s',
    'plain s',
    'ref s',
    'att/(a)',
    'att/(b)',
    'dlg/s',
    'calls/s',
    'call s',
    'call/(a)',
    'call calls/s',
    'local s',
    'loc/(a)',
    'loc calls/s',
    'turn s',
    'turn/(a)',
    'turn calls/s',
    'turn-local s',
    'tl/(a)',
    'tl calls/s',
    'p50 ms',
    'p95 ms',
    'orch p50',
    'worker MB',
    'server MB',
    'others',
  ];
  const rows = entries.map((e) => [
    String(e.latency_ms),
    String(e.concurrency),
    fmt(e.attune_s),
    fmt(e.plain_s),
    e.reference_s === null ? '-' : `${fmt(e.reference_s, 1)}${e.reference_extrapolated ? '*' : ''}`,
    fmt(e.attune_over_plain, 3),
    fmt(e.attune_over_reference, 4),
    fmt(e.dialogues_per_s),
    fmt(e.calls_per_s, 0),
    ...[e.per_call, e.local, e.turn, e.turn_local].flatMap((v) => [
      fmt(v?.attune_s ?? null),
      fmt(v?.attune_over_plain ?? null, 3),
      fmt(v?.calls_per_s ?? null, 0),
    ]),
    fmt(e.p50_ms, 1),
    fmt(e.p95_ms, 1),
    fmt(e.orchestration_p50_ms, 1),
    fmt(e.worker_rss_mb, 0),
    fmt(e.dev_server_rss_mb, 0),
    fmt(
      e.cpu_s.attune_other_processes !== undefined && e.cpu_s.attune_other_processes !== null && e.attune_s
        ? e.cpu_s.attune_other_processes / e.attune_s
        : null,
      2,
    ),
  ]);
  const e0 = entries[0];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  const notes = [
    `attune = the config's default (rollout.llmCalls=${e0?.mode.llmCalls}, rollout.activityPer=${e0?.mode.activityPer}); the other modes (the default's column empty):`,
    'call = an activity per LLM call; local = a local activity per call; turn = an activity per turn; turn-local = a local',
    'activity per turn, its finished calls journalled in the artifact store; X/(a) = X / plain loop;',
    'att/(a) = attune / plain loop; att/(b) = attune / reference loop; p50/p95 = added latency per turn (turn wall - L x calls);',
    'orch p50 = turn wall - HTTP time measured by the activities; MB = peak RSS during the timed run;',
    'others = CPU cores other processes on the machine used during the attune run (0 = undisturbed).',
    ...(entries.some((e) => e.reference_extrapolated)
      ? [
          '* reference partly extrapolated: sequential simulator calls timed up to --reference-budget per cell, the rest counted at the measured mean.',
        ]
      : []),
  ];
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line), '', ...notes].join('\n');
}

const byCell = (a: Entry, b: Entry): number => a.latency_ms - b.latency_ms || a.concurrency - b.concurrency;

/** Writes the entries (sorted by latency, then concurrency) and prints the table of all of them. */
export function writeResults(opts: Options, measured: Entry[], startedAtMs: number): void {
  const entries = [...measured].sort(byCell);
  mkdirSync(dirname(opts.out), { recursive: true });
  const kept =
    opts.update && existsSync(opts.out)
      ? (JSON.parse(readFileSync(opts.out, 'utf8')) as Entry[]).filter(
          (old) => !entries.some((e) => e.latency_ms === old.latency_ms && e.concurrency === old.concurrency),
        )
      : [];
  const all = [...kept, ...entries].sort(byCell);
  writeFileSync(opts.out, `${JSON.stringify(all, null, 2)}\n`);
  process.stdout.write(
    `\nOrchestration benchmark: ${opts.turns} turns per dialogue, ${cpus().length} CPUs, dev server: ${entries[0]?.dev_server ?? ''}\n\n${table(all)}\n\nwrote ${opts.out}${kept.length > 0 ? ` (${entries.length} cells measured now, ${kept.length} kept from before)` : ''} (${Math.round((Date.now() - startedAtMs) / 1000)} s)\n`,
  );
}
