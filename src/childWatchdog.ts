import { spawn, type ChildProcess } from 'node:child_process';

/**
 * A child process must not outlive this one, however this one ends: a signal handler cannot run
 * after SIGKILL or a crash, and Linux's PR_SET_PDEATHSIG is out of Node's reach. So one small shell
 * per process holds the read end of a pipe from it: the pipe closes when this process dies, however
 * it dies, and the shell then stops every child still registered (SIGTERM, SIGKILL after the grace).
 * A child is registered when it starts and unregistered when it exits, so a pid used again later is
 * never signalled. The shell ignores SIGINT and SIGHUP: a Ctrl-C to the terminal's process group must
 * leave it to do its job after the children that ignore that signal.
 */
const WATCHDOG_SCRIPT = `
trap '' INT HUP
pids=' '
while read -r op pid; do
  case "$op" in
    +) pids="$pids$pid " ;;
    -) pids=$(printf '%s' "$pids" | sed "s/ $pid / /") ;;
  esac
done
[ -z "$(echo $pids)" ] && exit 0
kill -TERM $pids 2>/dev/null
i=0
while [ $i -lt "$1" ]; do
  alive=''
  for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
  [ -z "$alive" ] && exit 0
  sleep 0.2
  i=$((i + 1))
done
kill -KILL $pids 2>/dev/null
exit 0
`;

/** How long the watchdog's children get between SIGTERM and SIGKILL, in 0.2 s ticks (10 s). */
const GRACE_TICKS = 50;

let watchdog: ChildProcess | null = null;

function theWatchdog(): ChildProcess {
  if (watchdog && watchdog.exitCode === null && watchdog.signalCode === null) return watchdog;
  const started = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT, 'attune-child-watchdog', String(GRACE_TICKS)], {
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  // Neither the shell nor its pipe may keep this process alive.
  started.unref();
  const stdin = started.stdin!;
  (stdin as unknown as { unref?: () => void }).unref?.();
  stdin.on('error', () => undefined);
  watchdog = started;
  return started;
}

/** Registers `child` with this process's watchdog until it exits; returns `child`. */
export function stopsWithThisProcess<T extends ChildProcess>(child: T): T {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return child;
  const dog = theWatchdog();
  dog.stdin!.write(`+ ${pid}\n`);
  child.once('exit', () => {
    if (dog.stdin && !dog.stdin.destroyed) dog.stdin.write(`- ${pid}\n`);
  });
  return child;
}
