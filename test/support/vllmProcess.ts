import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Every process's parent, from /proc (Linux). */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name in field 2 may hold spaces and parentheses: the fields after its last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      out.set(Number(entry), ppid);
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** The vLLM API server listening on `port`, and every process it started (its engine core). */
export function vllmProcesses(port: number): number[] {
  const tree = parents();
  const servers = [...tree.keys()].filter((pid) => {
    const cmd = commandLine(pid);
    return cmd.includes('vllm.entrypoints.openai.api_server') && cmd.includes(` --port ${port} `);
  });
  const found = new Set(servers);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of tree)
      if (!found.has(pid) && found.has(ppid)) {
        found.add(pid);
        grew = true;
      }
  }
  return [...found];
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** SIGKILLs vLLM on `port` with its children, as a crashed host would lose it; resolves once all are gone. */
export async function killVllm(port: number): Promise<number[]> {
  const pids = vllmProcesses(port);
  if (pids.length === 0) throw new Error(`no vLLM process listens on port ${port}`);
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  while (pids.some(alive)) await new Promise((r) => setTimeout(r, 100));
  return pids;
}

/** vLLM started again with scripts/vllm/start.sh, in its own process group; `stop` ends the group. */
export interface StartedVllm {
  child: ChildProcess;
  log: () => string;
  stop: () => Promise<void>;
}

/** Starts vLLM on `port` and resolves when start.sh prints that it answers (it waits on /health). */
export function startVllm(port: number, stateDir: string, args: string[], timeoutMs = 600_000): Promise<StartedVllm> {
  const child = spawn('bash', ['scripts/vllm/start.sh', '--port', String(port), '--state-dir', stateDir, ...args], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const started: StartedVllm = {
    child,
    log: () => text,
    async stop() {
      if (child.exitCode === null && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGTERM');
        } catch {
          // Already gone.
        }
        await exited;
      }
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`vLLM did not start in ${timeoutMs} ms:\n${text.slice(-3000)}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (/^vLLM ready/m.test(text)) {
        clearTimeout(timer);
        resolve(started);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`vLLM exited with ${code} before it answered:\n${text.slice(-3000)}`));
    });
  });
}
