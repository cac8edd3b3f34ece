import type { CapabilityReport } from '../../core/capability/capabilityReport.js';

const percent = (share: number): string => `${(share * 100).toFixed(1)} %`;

/** A suite run as text: the score with its interval, the environment it was measured in, each problem's result. */
export function renderCapabilityTable(report: CapabilityReport): string {
  const { environment: env } = report;
  const score =
    report.score === null || report.ci === null
      ? 'no problem ran'
      : `${report.solved}/${report.count} solved = ${percent(report.score)} (95 % CI ${percent(report.ci.low)} to ${percent(report.ci.high)}, Wilson)`;
  const version = env.policy.weightVersion ? ` (weights ${env.policy.weightVersion})` : '';
  const lines = [
    `${report.suite} suite ${report.evalId}: ${score}${report.failed > 0 ? `; ${report.failed} failed to run` : ''}`,
    `data set: ${env.dataset.name} (${env.dataset.license}), sha256 ${env.dataset.sha256}`,
    `policy: ${env.policy.model}${version} at ${env.policy.baseURL}`,
    `decoding: temperature ${env.decoding.temperature}, max tokens ${env.decoding.maxTokens}, seed ${env.decoding.seed}; prompt ${env.prompt.hash}`,
    ...(env.sandbox ? [`sandbox: ${env.sandbox.timeoutMs} ms per program`] : []),
    '',
  ];
  const width = Math.max(8, ...report.problems.map((p) => p.problemId.length)) + 2;
  lines.push(`${'problem'.padEnd(width)}${'result'.padEnd(8)}detail`);
  for (const p of report.problems) {
    const result = p.status === 'failed' ? 'error' : p.solved ? 'solved' : 'wrong';
    lines.push(`${p.problemId.padEnd(width)}${result.padEnd(8)}${p.status === 'failed' ? p.error : p.detail}`);
  }
  return lines.join('\n');
}
