import { openArtifactStore } from '../artifacts/openArtifactStore.js';
import type { ArtifactStore } from '../artifacts/store.js';
import { configWarnings } from '../config/crossFieldChecks.js';
import { loadConfig } from '../config/load.js';
import type { AttuneConfig } from '../config/schema.js';
import { createLogger, type Logger } from '../log.js';

export interface CommandContext {
  config: AttuneConfig;
  log: Logger;
  store: ArtifactStore;
}

export function commandContext(
  values: { config?: string | undefined; set?: string[] | undefined },
  component: string,
): CommandContext {
  const config = loadConfig({ ...(values.config ? { file: values.config } : {}), set: values.set ?? [] });
  for (const warning of configWarnings(config, process.env)) process.stderr.write(`attune: warning: ${warning}\n`);
  return { config, log: createLogger({ component }), store: openArtifactStore(config) };
}
/** Resolves on SIGINT/SIGTERM, so long-running commands can shut down cleanly. */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolveSignal) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolveSignal(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
