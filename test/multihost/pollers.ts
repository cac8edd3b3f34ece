import { Connection } from '@temporalio/client';

const ACTIVITY_QUEUE = 2;

/**
 * Whether the worker process `pid` has polled `queue` (an activity queue) since `sinceMs`: the
 * server's poller list names a worker by its identity, `pid@hostname` by default.
 */
export async function polledSince(address: string, queue: string, pid: number, sinceMs: number): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 3000 });
  try {
    const response = await connection.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: queue, kind: 1 },
      taskQueueType: ACTIVITY_QUEUE,
    });
    return (response.pollers ?? []).some(
      (p) =>
        (p.identity ?? '').startsWith(`${pid}@`) &&
        Number(p.lastAccessTime?.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime?.nanos ?? 0) / 1e6) >= sinceMs,
    );
  } finally {
    await connection.close();
  }
}
