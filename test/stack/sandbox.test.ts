import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { REPO_ROOT } from '../../src/paths.js';
import { failureText, run, stackSettings, type StackSettings } from '../support/dockerStack.js';

/**
 * The code suite in the attune image: the worker's sandbox (src/sandbox) runs a model-written program
 * there only confined. Under Docker's defaults the container cannot make namespaces and the sandbox
 * refuses; with docker-compose.sandbox.yml's security options it confines the program, whose
 * connection to a port listening on the host's loopback (the container shares the host's network)
 * never arrives.
 */

const overrideSchema = z.object({
  services: z.object({ 'attune-worker': z.object({ security_opt: z.array(z.string()).min(1) }) }),
});
const SANDBOX_OVERRIDE = 'docker-compose.sandbox.yml';

const outcomeSchema = z.union([
  z.object({ error: z.string(), message: z.string() }),
  z.object({ outcome: z.string(), stdoutTail: z.string(), confinement: z.array(z.string()) }),
]);

/** A program that tries to reach `port` on 127.0.0.1 and says whether it got there. */
const connectingProgram = (port: number) =>
  [
    'import socket',
    'try:',
    `    socket.create_connection(("127.0.0.1", ${port}), timeout=3).close()`,
    '    print("connected")',
    'except OSError as error:',
    '    print("refused:", error)',
  ].join('\n');

/** Node code run in the image: the worker's own sandbox, its result (or refusal) as one JSON line. */
const sandboxScript = (program: string) => `
import('/app/src/sandbox/runUntrustedPython.ts').then(async ({ runUntrustedPython }) => {
  try {
    const r = await runUntrustedPython({ program: ${JSON.stringify(program)}, timeoutMs: 20000 });
    console.log(JSON.stringify(r));
  } catch (error) {
    console.log(JSON.stringify({ error: error.name, message: error.message }));
  }
});`;

describe('the code suite in the attune image: model-written code runs only confined', function () {
  this.timeout(5 * 60_000);
  let settings: StackSettings;
  let listener: Server;
  let port: number;
  let connections = 0;

  before(async () => {
    settings = stackSettings();
    listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as { port: number }).port;
  });

  after(async () => {
    await new Promise((resolve) => listener?.close(resolve));
  });

  const runInImage = async (securityOptions: string[]) => {
    const result = await run(
      settings.dockerClient,
      [
        'run',
        '--rm',
        '--network',
        'host',
        ...securityOptions.flatMap((option) => ['--security-opt', option]),
        '--entrypoint',
        'node',
        settings.attuneImage,
        '--import',
        'tsx',
        '-e',
        sandboxScript(connectingProgram(port)),
      ],
      process.env,
    );
    assert.equal(result.code, 0, failureText('docker run (the sandbox in the attune image)', result));
    const line = result.stdout.trim().split('\n').at(-1) ?? '';
    return outcomeSchema.parse(JSON.parse(line));
  };

  it("refuses to run a program under Docker's default security options, naming why", async () => {
    const outcome = await runInImage([]);
    assert.ok('error' in outcome, `the sandbox ran the program: ${JSON.stringify(outcome)}`);
    assert.equal(outcome.error, 'SandboxUnavailableError');
    assert.match(outcome.message, /cannot isolate untrusted code/);
    assert.equal(connections, 0);
  });

  it(`runs it in its own namespaces with ${SANDBOX_OVERRIDE}'s options; its connection never arrives`, async () => {
    const override = overrideSchema.parse(parse(readFileSync(join(REPO_ROOT, SANDBOX_OVERRIDE), 'utf8')));
    const outcome = await runInImage(override.services['attune-worker'].security_opt);
    assert.ok(!('error' in outcome), `the sandbox refused: ${JSON.stringify(outcome)}`);
    assert.equal(outcome.outcome, 'passed', JSON.stringify(outcome));
    assert.ok(
      outcome.confinement.some((c) => c.startsWith('namespaces:') && c.includes('net')),
      `confinement: ${outcome.confinement.join(', ')}`,
    );
    assert.match(outcome.stdoutTail, /^refused:/m);
    assert.equal(connections, 0, 'a connection from the program reached the host');
  });
});
