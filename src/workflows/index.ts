export { rollout, rolloutProgressQuery } from './rollout.js';
export { evaluation } from './evaluation.js';
export { scheduledEvaluation } from './scheduledEvaluation.js';
export { training } from './training.js';
export { capabilityEvaluation } from './capabilityEvaluation.js';
