/** The learning benchmark's side-by-side view: one algorithm's reward curves per staleness, and its parity line. */

export interface StalenessCurve {
  name: string;
  credit: string;
  staleness: number;
  /** First-finished steps are labelled `S=N ff`. */
  stepDialogues?: string;
  rows: { step: number; reward_mean: number }[];
  last3: number;
}

const curveLabel = (c: StalenessCurve): string => `S=${c.staleness}${c.stepDialogues === 'firstFinished' ? ' ff' : ''}`;

/** Step, then the mean reward at each staleness, one line per step (a dash where a run has no such step). */
export function sideBySide(curves: StalenessCurve[]): string[] {
  const steps = [...new Set(curves.flatMap((c) => c.rows.map((r) => r.step)))].sort((a, b) => a - b);
  const header = ['step', ...curves.map((c) => curveLabel(c).padStart(7))].join(' ');
  const lines = steps.map((step) =>
    [
      String(step).padStart(4),
      ...curves.map((c) => (c.rows.find((r) => r.step === step)?.reward_mean.toFixed(3) ?? '-').padStart(7)),
    ].join(' '),
  );
  return [header, ...lines];
}

/** Last-three-steps mean reward per staleness and each one's difference from the first (the baseline). */
export function parityLine(label: string, curves: StalenessCurve[]): string {
  const [base, ...others] = curves;
  if (!base) return `${label} parity: no runs`;
  const means = curves.map((c) => `${curveLabel(c)} ${c.last3.toFixed(3)}`).join(', ');
  const diffs = others.map((c) => `${curveLabel(c)} - ${curveLabel(base)} ${signed(c.last3 - base.last3)}`);
  return `${label} parity (last-three-steps mean reward): ${means}${diffs.length ? `; ${diffs.join(', ')}` : ''}`;
}

function signed(x: number): string {
  // Rounded first, so a difference below the printed precision reads +0.000, not -0.000.
  const rounded = Number(x.toFixed(3));
  return `${rounded >= 0 ? '+' : ''}${rounded.toFixed(3)}`;
}

/**
 * Per plan at staleness 0 (its name without a suffix): its curves of the first credit mode at every
 * staleness (planned and first-finished) side by side, and the parity line.
 */
export function stalenessComparison(
  results: StalenessCurve[],
  bases: readonly { name: string }[],
  credit: string,
): string[] {
  return bases.flatMap((base) => {
    const curves = results.filter(
      (r) => r.credit === credit && (r.name === base.name || r.name.startsWith(`${base.name}-stale`)),
    );
    if (curves.length === 0) return [];
    return [
      '',
      `${base.name}: mean reward per step at each staleness`,
      ...sideBySide(curves),
      parityLine(base.name, curves),
    ];
  });
}
