import type { StepPublish } from './stepPublishes.js';
import { median } from '../median.js';

export type PublishMode = 'lora' | 'full';

/** A step's publish and what it moved: the files of the step's manifest (adapter or full weights). */
export interface StepRow extends StepPublish {
  bytes: number;
}

/** The per-step figures a mode's medians and the ratio are taken over. */
export const FIGURES = ['commitToFirstTokenMs', 'committedToFirstTokenMs', 'publishMs', 'loadMs', 'bytes'] as const;
export type Figure = (typeof FIGURES)[number];

export interface ModeResult {
  mode: PublishMode;
  run: string;
  steps: StepRow[];
  median: Record<Figure, number>;
}

export function medians(steps: readonly StepRow[]): Record<Figure, number> {
  return Object.fromEntries(FIGURES.map((f) => [f, median(steps.map((s) => s[f]))])) as Record<Figure, number>;
}

/** Full weights over LoRA, median against median, for each figure. */
export function ratios(lora: ModeResult, full: ModeResult): Record<Figure, number> {
  return Object.fromEntries(FIGURES.map((f) => [f, full.median[f] / lora.median[f]])) as Record<Figure, number>;
}

const MB = 1e6;
const s = (ms: number) => (ms / 1000).toFixed(2);
const mb = (bytes: number) => (bytes / MB).toFixed(bytes < MB ? 3 : 1);

/** One line of the Markdown table (a step, or a mode's median). */
function row(mode: string, step: string, r: Record<Figure, number> & Partial<StepPublish>): string {
  const parts = r.commitToAnswerMs !== undefined ? `${s(r.commitToAnswerMs)} + ${s(r.committedToFirstTokenMs)}` : '';
  return `| ${mode} | ${step} | ${s(r.commitToFirstTokenMs)} | ${parts} | ${s(r.publishMs)} | ${s(r.loadMs)} | ${mb(r.bytes)} |`;
}

/** The printed table (Markdown): every step of both modes, each mode's median, and full / LoRA. */
export function publishTable(lora: ModeResult, full: ModeResult): string {
  const lines = [
    '| mode | step | commit → first token, s | trainer answer + recorded → first token, s | publish activity → first token, s | load alone, s | MB moved |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const m of [lora, full]) {
    for (const step of m.steps) lines.push(row(m.mode, String(step.step), step));
    lines.push(row(m.mode, 'median', m.median));
  }
  const x = ratios(lora, full);
  const times = (v: number) => `×${v.toFixed(1)}`;
  lines.push(
    `| full / LoRA | medians | ${times(x.commitToFirstTokenMs)} | | ${times(x.publishMs)} | ${times(x.loadMs)} | ${times(x.bytes)} |`,
  );
  return lines.join('\n');
}
