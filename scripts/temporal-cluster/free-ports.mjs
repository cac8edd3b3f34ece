// Prints N distinct free 127.0.0.1 ports below 32768, one per line, all held open at once so none
// repeats. Below 32768: Temporal's SQL schema keeps membership ports in a smallint, and the kernel
// hands out bind(0) ports from 32768 up.
import { createServer } from 'node:net';

const count = Number(process.argv[2] ?? 1);
const [low, high] = [20000, 32767];

function tryListen(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

const servers = [];
for (let attempt = 0; servers.length < count; attempt++) {
  if (attempt > 1000) throw new Error(`no ${count} free ports in ${low}-${high}`);
  const server = await tryListen(low + Math.floor(Math.random() * (high - low + 1)));
  if (server) servers.push(server);
}
console.log(servers.map((s) => s.address().port).join('\n'));
await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
