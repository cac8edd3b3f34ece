/**
 * Where a process's CPU went, from a V8 CPU profile that `--profile DIR` wrote: self time per
 * package or source folder, and the functions with the most self time, each also per LLM call.
 *
 *   node --import tsx bench/orchestration/profileSummary.ts PROFILE.cpuprofile --calls N [--top 15]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';

const profileSchema = z.object({
  nodes: z.array(
    z.object({
      id: z.number(),
      callFrame: z.object({ functionName: z.string(), url: z.string(), lineNumber: z.number() }),
    }),
  ),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});

/** The package or folder a script belongs to: what a reader can act on. */
export function areaOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const src = /\/(src|bench|test)\/([^/]+)/.exec(url);
  if (src) return `${src[1]}/${src[2]}`;
  return '(other)';
}

export interface ProfileSummary {
  totalMs: number;
  byArea: Array<{ area: string; ms: number }>;
  byFunction: Array<{ fn: string; area: string; ms: number }>;
}

export function summariseProfile(text: string): ProfileSummary {
  const profile = profileSchema.parse(JSON.parse(text));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const area = new Map<string, number>();
  const fns = new Map<string, { area: string; ms: number }>();
  let totalMs = 0;
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id);
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    if (!frame || frame.functionName === '(idle)') return;
    totalMs += ms;
    const where = areaOf(frame.url, frame.functionName);
    area.set(where, (area.get(where) ?? 0) + ms);
    const key = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-2).join('/')}:${frame.lineNumber + 1}`;
    const entry = fns.get(key) ?? { area: where, ms: 0 };
    entry.ms += ms;
    fns.set(key, entry);
  });
  return {
    totalMs,
    byArea: [...area].map(([a, ms]) => ({ area: a, ms })).sort((a, b) => b.ms - a.ms),
    byFunction: [...fns].map(([fn, e]) => ({ fn, ...e })).sort((a, b) => b.ms - a.ms),
  };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { calls: { type: 'string' }, top: { type: 'string', default: '15' }, help: { type: 'boolean' } },
  });
  if (values.help || positionals.length !== 1) {
    console.log('usage: profileSummary.ts PROFILE.cpuprofile [--calls N] [--top 15]');
    process.exit(values.help ? 0 : 2);
  }
  const calls = values.calls ? Number(values.calls) : null;
  const summary = summariseProfile(readFileSync(positionals[0]!, 'utf8'));
  const per = (ms: number) => (calls ? `${(ms / calls).toFixed(3).padStart(8)} ms/call` : '');
  const share = (ms: number) => `${((100 * ms) / summary.totalMs).toFixed(1).padStart(5)} %`;
  console.log(`busy ${summary.totalMs.toFixed(0)} ms ${per(summary.totalMs)}`);
  console.log('\nself time by package or folder');
  for (const a of summary.byArea.slice(0, Number(values.top)))
    console.log(`${share(a.ms)} ${a.ms.toFixed(0).padStart(7)} ms ${per(a.ms)}  ${a.area}`);
  console.log('\nfunctions with the most self time');
  for (const f of summary.byFunction.slice(0, Number(values.top)))
    console.log(`${share(f.ms)} ${per(f.ms)}  ${f.fn} [${f.area}]`);
}

if (process.argv[1]?.endsWith('profileSummary.ts')) main();
