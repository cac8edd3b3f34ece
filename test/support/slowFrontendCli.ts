/**
 * A stand-in for the Temporal CLI whose frontend is slow to answer: it runs the real CLI on a port
 * of its own and answers the port it was given through a proxy that delays what it sends back by
 * SLOW_FRONTEND_DELAY_MS: every answer arrives that late, as from a frontend on a loaded machine. Started by
 * DevServer through TEMPORAL_CLI_PATH (a wrapper script), with the real CLI in REAL_TEMPORAL_CLI.
 */
import { spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { freePort } from '../../src/temporal/devServer.js';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const portAt = args.indexOf('--port') + 1;
  const exposed = Number(args[portAt]);
  const delayMs = Number(process.env.SLOW_FRONTEND_DELAY_MS ?? '1500');
  const inner = await freePort();
  args[portAt] = String(inner);
  const cli = spawn(process.env.REAL_TEMPORAL_CLI!, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  cli.once('exit', (code) => process.exit(code ?? 1));
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => cli.kill(signal));

  // Every answer reaches the client delayMs late (in order: equal timeouts fire first in, first out).
  createServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port: inner });
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => setTimeout(() => client.writable && client.write(chunk), delayMs));
    upstream.once('error', () => client.destroy());
    upstream.once('close', () => setTimeout(() => client.destroy(), delayMs));
    client.once('error', () => upstream.destroy());
    client.once('close', () => upstream.destroy());
  }).listen(exposed, '127.0.0.1');
}

void main();
