/**
 * Ctrl-C must stop every process a command started and leave nothing listening. Components that
 * start something register how to stop it; the first SIGINT/SIGTERM runs them all (newest first)
 * and exits; a second signal exits at once.
 */
type Stopper = () => Promise<void>;
const stoppers: Stopper[] = [];
let installed = false;
let stopping = false;

export function onShutdown(stop: Stopper): () => void {
  stoppers.push(stop);
  installSignalHandlers();
  return () => {
    const index = stoppers.indexOf(stop);
    if (index >= 0) stoppers.splice(index, 1);
  };
}

export async function runShutdown(): Promise<void> {
  while (stoppers.length > 0) {
    const stop = stoppers.pop()!;
    await stop().catch((error: unknown) => process.stderr.write(`shutdown: ${String(error)}\n`));
  }
}

function installSignalHandlers(): void {
  if (installed) return;
  installed = true;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    // Calls still in flight (a long poll for a result, a status query) fail as their connections
    // close: expected while stopping, so they must not turn a clean Ctrl-C into a crash.
    const ignore = () => undefined;
    process.on('uncaughtException', ignore);
    process.on('unhandledRejection', ignore);
    process.stderr.write(`\n${signal}: stopping everything this command started...\n`);
    void runShutdown().finally(() => process.exit(130));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}
