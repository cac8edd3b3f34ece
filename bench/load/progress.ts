import { progressOf } from '../orchestration/progress.js';

/** Progress of a load run, in bench:orchestration's format. */
export const progress = progressOf('bench:load');
