/** Reports: self-contained HTML pages (inline CSS, JS and SVG) of evaluations and runs, plus PNG charts. */
export { renderEvaluationPage, type EvaluationPageInput } from './evaluationPage.js';
export { renderRunPage, type RunPageInput } from './runPage.js';
export { runEvalPoints, type RunEvalPoint } from './runEvalPoints.js';
export {
  evaluationsOfRun,
  loadEvaluation,
  loadRun,
  parseRunMetrics,
  type LoadedEvaluation,
  type LoadedRun,
} from './load.js';
export {
  CHROMIUM_ARGS,
  CHROMIUM_HINT,
  DEFAULT_CHROMIUM,
  renderPngs,
  ReportTargetNotFoundError,
  resolveChromium,
  writeReport,
  type ReportResult,
  type WriteReportOptions,
} from './write.js';
export { escapeHtml } from './html.js';
