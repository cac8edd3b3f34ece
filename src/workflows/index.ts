export { rollout, rolloutProgressQuery } from './rollout.js';
