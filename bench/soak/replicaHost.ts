/**
 * One fake vLLM replica as a process of its own, so the soak can restart it like a real vLLM (SIGKILL,
 * then a new process on the same port: back on its launch weights, `default`, unpaused):
 *   node --import tsx bench/soak/replicaHost.ts PORT CONTROL_PORT ANSWER_LOG
 * PORT serves chat completions and vLLM's dev-mode RL routes (test/support/fakeFullWeights.ts). Each
 * policy answer names the weight version the replica served when it answered (`[served NAME@k]`) and
 * is appended to ANSWER_LOG (JSONL, kept across restarts), so the soak checks every recorded turn
 * against what served it. CONTROL_PORT: `POST /fail-resumes?n=N` makes the next N `/resume` calls
 * answer 500 (leaving the replica paused); `GET /state` answers `ReplicaState`.
 */
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { DEFAULT_BEHAVIOUR, FakeOpenAIServer, type CallContext } from '../../test/support/fakeOpenAI.js';
import { servedTag, type ReplicaAnswer, type ReplicaState } from './replicaProtocol.js';

/** Planted (ATTUNE_SOAK_PLANT=versions): answers tagged with the version before the one served. */
const staleTag = process.env.ATTUNE_SOAK_STALE_TAG === '1';
const staleVersion = (version: string): string =>
  version.replace(/@(\d+)$/, (_, k: string) => `@${Math.max(Number(k) - 1, 0)}`);

async function main(): Promise<void> {
  const [portText, controlText, answerLog] = process.argv.slice(2);
  const port = Number(portText);
  const controlPort = Number(controlText);
  if (!Number.isInteger(port) || !Number.isInteger(controlPort) || !answerLog)
    throw new Error('usage: replicaHost.ts PORT CONTROL_PORT ANSWER_LOG');
  let fake: FakeOpenAIServer | null = null;
  /** `/resume` failures asked for since this process started: those not left to fire have fired. */
  let armed = 0;
  const policy = (ctx: CallContext): string => {
    const weights = fake!.fullWeights;
    // The request's seed in the reply: a GRPO group's samples differ, so their rewards do and the weights move.
    const tagged = staleTag ? staleVersion(weights.version) : weights.version;
    const answer = `${DEFAULT_BEHAVIOUR.policy(ctx)} (${(ctx.body.seed ?? 0) % 89})${servedTag(tagged)}`;
    const line: ReplicaAnswer = { atMs: Date.now(), version: weights.version, paused: weights.paused, answer };
    appendFileSync(answerLog, `${JSON.stringify(line)}\n`);
    return answer;
  };
  fake = await FakeOpenAIServer.start({ latencyMs: 50, policy }, port);
  const control = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://control');
    const weights = fake.fullWeights;
    if (req.method === 'POST' && url.pathname === '/fail-resumes') {
      const n = Number(url.searchParams.get('n'));
      const more = Number.isInteger(n) && n > 0 ? n : 1;
      weights.failResumes += more;
      armed += more;
      res.writeHead(200).end('{}');
      return;
    }
    if (url.pathname !== '/state') {
      res.writeHead(404).end('{}');
      return;
    }
    const state: ReplicaState = {
      version: weights.version,
      paused: weights.paused,
      failResumesLeft: weights.failResumes,
      resumesFailed: armed - weights.failResumes,
      reloads: weights.calls.filter((c) => c.route === '/collective_rpc').length,
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(state));
  });
  await new Promise<void>((resolve) => control.listen(controlPort, '127.0.0.1', resolve));
  process.stdout.write(`replica ready on ${fake.url}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`replicaHost: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
