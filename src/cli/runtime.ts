import type { Worker } from '@temporalio/worker';
import { reconnectingLink, type FrontendLink } from '../client/frontendLink.js';
import { connectTemporal, connectWorkerSide, type TemporalHandle } from '../temporal/connect.js';
import { optimizerWorkerPolling, rolloutWorkersPolling } from '../temporal/pollers.js';
import { installTemporalLogging } from '../temporal/runtimeLogging.js';
import { createLlmIoWorkers } from '../workers/llmIoWorkers.js';
import { runWorkers, shutdownWorkers } from '../workers/runWorkers.js';
import { createOptimizerWorker } from '../workers/optimizerWorker.js';
import type { CommandContext } from './context.js';
import { onShutdown } from './shutdown.js';
import { ensureLocalModels } from './localModels.js';
import { ensureLocalTrainer } from './localTrainer.js';

/**
 * What a command that runs workflows needs: a Temporal server (the configured one, the one of
 * `attune dev`, or an embedded one), workers (in this process when none poll), and the local
 * model server when an endpoint points at it. Everything started here stops when `fn` returns.
 */
export async function withRuntime<T>(
  ctx: CommandContext,
  fn: (temporal: TemporalHandle, runtime: { ownWorkers: boolean }) => Promise<T>,
  options: { optimizer?: boolean } = {},
): Promise<T> {
  const { config, log } = ctx;
  installTemporalLogging();
  const models = await ensureLocalModels(config, log);
  const trainer = options.optimizer
    ? await ensureLocalTrainer(config, log).catch(async (error: unknown) => {
        await models.close();
        throw error;
      })
    : null;
  let temporal: TemporalHandle | null = null;
  let workers: Worker[] = [];
  let running: Promise<void> | null = null;
  const cleanup = async () => {
    if (running) {
      shutdownWorkers(workers);
      await running.catch((error: unknown) => log.error('worker failed', { error: String(error) }));
      running = null;
    }
    await temporal?.close();
    temporal = null;
    await trainer?.close();
    await models.close();
  };
  const unregister = onShutdown(cleanup);
  try {
    temporal = await connectTemporal(config, log);
    if (!(await rolloutWorkersPolling(temporal, config))) {
      log.info('no workers polling: starting them in this process');
      await ctx.store.probe?.();
      const connection = await connectWorkerSide(temporal);
      workers = await createLlmIoWorkers({ connection, namespace: temporal.namespace, config, store: ctx.store });
    }
    if (options.optimizer && !(await optimizerWorkerPolling(temporal, config))) {
      log.info('no optimizer worker polling: starting one in this process');
      if (workers.length === 0) await ctx.store.probe?.();
      const connection = await connectWorkerSide(temporal);
      workers.push(
        await createOptimizerWorker({ connection, namespace: temporal.namespace, config, store: ctx.store }),
      );
    }
    if (workers.length > 0) running = runWorkers(workers);
    return await fn(temporal, { ownWorkers: workers.length > 0 });
  } finally {
    unregister();
    await cleanup();
  }
}

/**
 * The link a command follows its workflow on: through a restart or a stall of the Temporal frontend it
 * reconnects and follows on, for as long as it takes. Ctrl-C ends it before the command's connections
 * close, so their errors are not taken for an outage.
 */
export async function withFollowerLink<T>(
  ctx: CommandContext,
  temporal: TemporalHandle,
  fn: (link: FrontendLink) => Promise<T>,
): Promise<T> {
  const stopped = new AbortController();
  const unregister = onShutdown(async () => stopped.abort());
  const link = reconnectingLink({
    client: temporal.client,
    address: temporal.address,
    connect: () => temporal.connectAgain(),
    log: ctx.log,
    signal: stopped.signal,
  });
  try {
    return await fn(link);
  } finally {
    unregister();
    await link.close();
  }
}

export function workflowUiUrl(temporal: TemporalHandle, workflowId: string): string | null {
  return temporal.uiUrl
    ? `${temporal.uiUrl}/namespaces/${temporal.namespace}/workflows/${encodeURIComponent(workflowId)}`
    : null;
}
