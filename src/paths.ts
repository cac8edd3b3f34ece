import { resolve } from 'node:path';

/** The checkout's root: src/ sits directly under it. */
export const REPO_ROOT = resolve(__dirname, '..');
