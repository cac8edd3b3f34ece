import { CONFIG_HELP, CONFIG_OPTIONS, parseCommand } from '../args.js';
import { commandContext, untilSignal } from '../context.js';
import { connectTemporal, connectWorkerSide } from '../../temporal/connect.js';
import { installTemporalLogging } from '../../temporal/runtimeLogging.js';
import { createLlmIoWorkers, runWorkers, shutdownWorkers } from '../../workers/llmIoWorkers.js';

export const WORKER_HELP = `attune worker [options]

Runs the LLM-I/O workers (rollout workflows, policy and simulator activities) against the
configured Temporal server (TEMPORAL_ADDRESS, or the dev server of \`attune dev\`). Stops cleanly on
SIGINT/SIGTERM, handing unfinished work back after a grace time.

${CONFIG_HELP}`;

export async function workerCommand(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, CONFIG_OPTIONS, false);
  if (values.help) {
    process.stdout.write(`${WORKER_HELP}\n`);
    return 0;
  }
  const ctx = commandContext(values, 'worker');
  installTemporalLogging();
  const temporal = await connectTemporal(ctx.config, ctx.log, { startIfMissing: false });
  const connection = await connectWorkerSide(temporal);
  const workers = await createLlmIoWorkers({ connection, namespace: temporal.namespace, config: ctx.config, store: ctx.store });
  ctx.log.info('workers running', { address: temporal.address, namespace: temporal.namespace, queuePrefix: ctx.config.temporal.taskQueuePrefix, pid: process.pid });
  const running = runWorkers(workers);
  const stopped = await Promise.race([running.then(() => null), untilSignal()]);
  if (stopped) {
    ctx.log.info('shutting down workers', { signal: stopped });
    shutdownWorkers(workers);
    await running;
  }
  await connection.close();
  await temporal.close();
  return 0;
}
