import type { RewardEnvironment } from '../core/evaluationManifest.js';
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { environmentRows } from './evaluationManifest.js';
import { html, type SafeHtml } from './html.js';

/** Consecutive steps whose rewards were measured in one environment (null: recorded before environments were). */
interface EnvironmentSpan {
  first: number;
  last: number;
  environment: RewardEnvironment | null;
}

function environmentSpans(steps: readonly StepMetricsRecord[]): EnvironmentSpan[] {
  const spans: (EnvironmentSpan & { key: string })[] = [];
  for (const step of steps) {
    const environment = step.environment ?? null;
    const key = JSON.stringify(environment);
    const open = spans[spans.length - 1];
    if (open && open.key === key) open.last = step.step;
    else spans.push({ first: step.step, last: step.step, environment, key });
  }
  return spans.map(({ first, last, environment }) => ({ first, last, environment }));
}

function stepRange({ first, last }: EnvironmentSpan): string {
  return first === last ? `step ${first}` : `steps ${first}–${last}`;
}

/**
 * What the run's rewards were measured in, beside them: the simulated user, its prompts and the
 * protocol, one block per span of steps that shared them. A change mid-run (a new simulator after a
 * resume, other prompts) shows as a second block, and rewards either side of it are not comparable.
 */
export function environmentCard(steps: readonly StepMetricsRecord[]): SafeHtml {
  const spans = environmentSpans(steps);
  if (spans.length === 0) return html``;
  const changed = spans.length > 1;
  return html`<section class="card" id="environment">
  <div class="card-head"><div><h2>Reward environment</h2><p>${changed ? 'changed during the run: rewards of different spans are not comparable' : `the same for every step recorded`}</p></div></div>
  ${spans.map(
    (span) =>
      html`${changed ? html`<h3>${stepRange(span)}</h3>` : ''}${
        span.environment
          ? html`<dl class="kv">${environmentRows(span.environment).map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`
          : html`<p>Not recorded: these steps were written before step records carried their environment.</p>`
      }`,
  )}
</section>`;
}
