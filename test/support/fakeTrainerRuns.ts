import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Just enough of the trainer's HTTP API for "latest published version": GET /v1/runs/{run} answers `step`. */
export async function fakeTrainerRuns(step: number): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const match = /^\/v1\/runs\/([^/]+)$/.exec(req.url ?? '');
    res.setHeader('content-type', 'application/json');
    if (req.method === 'GET' && match) {
      res.end(JSON.stringify({ run_id: decodeURIComponent(match[1]!), step, algorithm: 'grpo', checkpoints: [] }));
    } else {
      res.statusCode = 404;
      res.end(JSON.stringify({ error: { message: 'not found' } }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}
