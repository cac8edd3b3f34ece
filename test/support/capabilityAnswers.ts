import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CAPABILITY_DATA_DIR, CAPABILITY_DATASETS } from '../../src/scenarios/capabilityDatasets.js';
import type { CallContext } from './fakeOpenAI.js';

interface HumanEvalRow {
  task_id: string;
  prompt: string;
  entry_point: string;
  canonical_solution: string;
}

/** The vendored HumanEval rows, with the reference solutions the suite itself never reads. */
export function humanEvalRows(): HumanEvalRow[] {
  return readFileSync(join(CAPABILITY_DATA_DIR, CAPABILITY_DATASETS.code.file), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as HumanEvalRow);
}

/** A TCP listener on loopback that counts who connects: a sandboxed program must never reach it. */
export class ConnectionWitness {
  connections = 0;
  private readonly sockets: Socket[] = [];
  private constructor(private readonly server: Server) {}

  static async start(): Promise<ConnectionWitness> {
    const server = createServer();
    const witness = new ConnectionWitness(server);
    server.on('connection', (socket) => {
      witness.connections++;
      witness.sockets.push(socket);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return witness;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * The policy's planted answers to HumanEval/0-2, recognised by the function each prompt asks for:
 * the reference solution (passes), an answer that returns nothing useful (fails its tests), and a
 * correct answer that first connects to `port` on loopback: it can only fail by being stopped.
 */
export function plantedCodeAnswers(port: number): (ctx: CallContext) => string {
  const [first] = humanEvalRows();
  const answers: Record<string, string> = {
    has_close_elements: `Here it is:\n\`\`\`python\n${first!.prompt}${first!.canonical_solution}\`\`\`\n`,
    separate_paren_groups:
      '```python\nfrom typing import List\n\n\ndef separate_paren_groups(paren_string: str) -> List[str]:\n    return []\n```',
    truncate_number: [
      '```python',
      'import socket',
      '',
      '',
      'def truncate_number(number: float) -> float:',
      `    connection = socket.create_connection(("127.0.0.1", ${port}), timeout=2)`,
      '    connection.sendall(b"a secret")',
      '    return number % 1.0',
      '```',
    ].join('\n'),
  };
  return (ctx) => {
    const found = Object.keys(answers).find((name) => ctx.last.includes(`def ${name}(`));
    return found ? answers[found]! : 'I do not know.';
  };
}
