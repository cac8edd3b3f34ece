import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { SIMULATOR_TAGS } from '../../src/core/prompts/simulator.js';
import { FakeFullWeights } from './fakeFullWeights.js';
import { FakeLoraAdapters } from './fakeLora.js';

export type CallRole = 'policy' | 'analysis' | 'reply' | 'opening';
export type Fault = '429' | '500' | '401' | '404' | 'timeout' | 'malformed' | 'hold' | 'labelled' | 'plain-json';

const requestSchema = z
  .object({
    model: z.string().min(1),
    messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() })).min(1),
    temperature: z.number().optional(),
    top_p: z.number().optional(),
    max_tokens: z.number().int().positive().optional(),
    seed: z.number().int().optional(),
    response_format: z.unknown().optional(),
  })
  .passthrough();
export type FakeRequest = z.infer<typeof requestSchema>;

export interface CallContext {
  role: CallRole;
  /** 1-based count of calls of this role so far, this one included. */
  nth: number;
  body: FakeRequest;
  /** Assistant turns visible in the prompt (policy: turns before this one; analysis: includes the one analysed). */
  turn: number;
  /** The last message's text. */
  last: string;
  /** The persona name found in the simulator prompt (identifies the dialogue). */
  persona: string | null;
}

export interface AnalysisAnswer {
  emotionChange: number;
  innerThoughts?: string;
}

export interface FakeBehaviour {
  latencyMs?: number;
  /** Latency of one call, ms, decided per call (e.g. drawn from a distribution); when set, replaces `latencyMs`. */
  latencyFor?: (ctx: CallContext) => number;
  policy?: (ctx: CallContext) => string;
  analysis?: (ctx: CallContext) => AnalysisAnswer;
  reply?: (ctx: CallContext) => string;
  opening?: (ctx: CallContext) => string;
  /** A fault decided per call (e.g. for one persona), besides the ones injected by number. */
  fault?: (ctx: CallContext) => Fault | undefined;
  /**
   * A sampling simulator: a request answered before (200, delivered) gets a different answer each
   * time it is made again, so a call made twice shows in what was recorded.
   */
  samples?: boolean;
}

export interface RecordedCall {
  role: CallRole;
  nth: number;
  /** Hash of what identifies the request: role, messages, seed. A replayed call has the same key. */
  key: string;
  status: number;
  /** The request's seed (Attune derives one per dialogue, turn and role). */
  seed: number | null;
  /** When the request arrived (epoch ms, sub-millisecond). */
  arrivedAtMs: number;
  /** When it was answered (epoch ms). */
  answeredAtMs: number;
  /** The request's messages, as sent. */
  messages: { role: string; content: string }[];
  /** The answer's content (200 only; '' otherwise). */
  answer: string;
  /** Whether the answer went to a client still connected (a killed client's socket is closed first). */
  delivered: boolean;
  /** The client's TCP port: which process made the call (see `onArrival`). */
  remotePort: number;
  /**
   * The weight labels (vLLM's `/weight_info`) the request was generated under: the one when its
   * generation started, then the one when it ended if a reload came in between.
   */
  weights?: string[];
}

function hashOf(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}

function classify(body: FakeRequest): CallRole {
  const system = body.messages.find((m) => m.role === 'system')?.content ?? '';
  if (system.startsWith(SIMULATOR_TAGS.analysis)) return 'analysis';
  if (system.startsWith(SIMULATOR_TAGS.reply)) return 'reply';
  if (system.startsWith(SIMULATOR_TAGS.opening)) return 'opening';
  return 'policy';
}

/** The publish's first-token probe (src/vllm/adapters.ts): one user message, one token; no role's call asks for one token. */
function isFirstTokenProbe(body: FakeRequest): boolean {
  return body.max_tokens === 1 && body.messages.length === 1 && body.messages[0]?.role === 'user';
}

/** Default behaviour: deterministic text derived from the request, so identical requests get identical answers. */
export const DEFAULT_BEHAVIOUR: Required<Omit<FakeBehaviour, 'latencyMs' | 'latencyFor' | 'fault' | 'samples'>> = {
  policy: (ctx) => {
    const think = (ctx.body.messages[0]?.content ?? '').includes('<think>');
    const reply = `It sounds like that has been weighing on you (${hashOf(ctx.last) % 997}). What part of it stays with you most?`;
    return think ? `<think>They need to feel heard first (${ctx.turn}).</think>${reply}` : reply;
  },
  analysis: (ctx) => ({ emotionChange: (hashOf(ctx.last) % 9) - 2 }),
  reply: (ctx) => `Turn ${ctx.turn}: I guess so. It's the way nobody noticed (${hashOf(ctx.last) % 991}).`,
  opening: () => 'Hey. Can I talk to you about something that has been bugging me?',
};

/** An OpenAI-compatible chat server for tests: deterministic, with injectable faults and call accounting. */
export class FakeOpenAIServer {
  readonly calls: RecordedCall[] = [];
  /** vLLM's runtime LoRA loading (`training.publish.mode: vllm`), with injectable refusals. */
  readonly lora = new FakeLoraAdapters();
  /** vLLM's dev-mode RL routes (full-weight reloads, the weight version). */
  readonly fullWeights = new FakeFullWeights();
  /** Models of the completions answered 404 "does not exist" (see `lora.servesOnlyLoaded`). */
  readonly missing: string[] = [];
  /** Models of the first-token probes (one-token chat completions) answered. */
  readonly probes: string[] = [];
  /** Routes (`POST /v1/chat/completions`) answered 404 "no route", as by a server that lacks them. */
  readonly unrouted = new Set<string>();
  private readonly counters: Record<CallRole, number> = { policy: 0, analysis: 0, reply: 0, opening: 0 };
  private readonly faults = new Map<string, Fault>();
  private readonly waiters: { role: CallRole; nth: number; resolve: () => void }[] = [];
  private readonly arrivals = new Map<string, number>();
  private readonly held: ServerResponse[] = [];
  private releaseHeld: (() => void)[] = [];
  /** While set, `GET /v1/models` waits for `release()`; `modelListAsked` resolves when one arrives. */
  holdModelList = false;
  /** Told of each chat completion as it arrives (before it is answered), with the client's TCP port. */
  onArrival: ((remotePort: number) => void) | null = null;
  private modelListArrived: (() => void) | undefined;
  readonly modelListAsked = new Promise<void>((resolve) => (this.modelListArrived = resolve));
  behaviour: FakeBehaviour;

  private constructor(
    private readonly server: Server,
    behaviour: FakeBehaviour,
    private readonly host: string,
  ) {
    this.behaviour = behaviour;
  }

  /** On `host` (default loopback; a multi-host test's namespace address), port 0: a free one. */
  static async start(behaviour: FakeBehaviour = {}, port = 0, host = '127.0.0.1'): Promise<FakeOpenAIServer> {
    let instance: FakeOpenAIServer | null = null;
    const server = createServer((req, res) => {
      void instance?.handle(req, res);
    });
    // Test clients are short-lived; don't let idle keep-alive sockets hold the event loop.
    server.keepAliveTimeout = 1000;
    instance = new FakeOpenAIServer(server, behaviour, host);
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    return instance;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://${this.host}:${this.port}/v1`;
  }

  count(role?: CallRole): number {
    return role ? this.counters[role] : Object.values(this.counters).reduce((a, b) => a + b, 0);
  }

  /** Answers the nth call of `role` (1-based, counted over the server's life) with a fault. */
  inject(role: CallRole, nth: number, fault: Fault): void {
    this.faults.set(`${role}:${nth}`, fault);
  }

  /**
   * When the nth call of `role` arrived (set before `waitForCall` resolves; `calls` records a call only
   * once it is answered, which a policy call's generation may put a tick later).
   */
  arrivedAtMs(role: CallRole, nth: number): number | undefined {
    return this.arrivals.get(`${role}:${nth}`);
  }

  /** Resolves when the nth call of `role` has arrived (before it is answered). */
  waitForCall(role: CallRole, nth: number): Promise<void> {
    if (this.counters[role] >= nth) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ role, nth, resolve }));
  }

  /** Lets held calls go on (answered normally, if their client is still there). */
  release(): void {
    const pending = this.releaseHeld;
    this.releaseHeld = [];
    for (const go of pending) go();
  }

  /** How many times each distinct request was answered successfully. */
  successCountsByKey(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const call of this.calls) if (call.status === 200) counts.set(call.key, (counts.get(call.key) ?? 0) + 1);
    return counts;
  }

  async close(): Promise<void> {
    this.release();
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (
      this.fullWeights.handle(
        req.method ?? '',
        req.url ?? '',
        Buffer.concat(chunks).toString('utf8'),
        res,
        (r, status, body) => this.send(r, status, body),
      )
    )
      return;
    if (req.method === 'GET' && req.url === '/v1/models') {
      this.modelListArrived?.();
      if (this.holdModelList) {
        this.held.push(res);
        await new Promise<void>((resolve) => this.releaseHeld.push(resolve));
      }
      return this.send(res, 200, {
        object: 'list',
        data: ['fake-model', ...this.lora.names()].map((id) => ({
          id,
          object: 'model',
          created: 0,
          owned_by: 'attune-test',
        })),
      });
    }
    if (req.method === 'POST' && req.url === '/v1/load_lora_adapter') {
      return this.lora.load(Buffer.concat(chunks).toString('utf8'), res, (r, status, body) =>
        this.send(r, status, body),
      );
    }
    if (req.method === 'POST' && req.url === '/v1/unload_lora_adapter') {
      return this.lora.unload(Buffer.concat(chunks).toString('utf8'), res, (r, status, body) =>
        this.send(r, status, body),
      );
    }
    // Like many OpenAI-compatible servers, it serves chat completions only: no `/v1/completions`.
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions' || this.unrouted.has(`${req.method} ${req.url}`)) {
      return this.send(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: 'not_found' } });
    }
    let parsed;
    try {
      parsed = requestSchema.safeParse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    } catch {
      return this.send(res, 400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
    }
    if (!parsed.success) {
      return this.send(res, 400, {
        error: { message: `invalid request: ${parsed.error.issues[0]?.path.join('.')}`, type: 'invalid_request_error' },
      });
    }
    const body = parsed.data;
    if (!this.lora.serves(body.model)) return this.modelMissing(res, body.model);
    if (isFirstTokenProbe(body)) return this.probeAnswer(res, body.model);
    const role = classify(body);
    const nth = ++this.counters[role];
    const key = createHash('sha256')
      .update(JSON.stringify([role, body.messages, body.seed ?? null]))
      .digest('hex')
      .slice(0, 16);
    for (const waiter of this.waiters.filter((w) => w.role === role && w.nth <= nth)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    const messages = body.messages;
    const lastMessage = messages[messages.length - 1]?.content ?? '';
    const personaName = /Name: (.+)/.exec(messages[0]?.content ?? '')?.[1] ?? null;
    const turn =
      role === 'policy'
        ? messages.filter((m) => m.role === 'assistant').length + 1
        : (lastMessage.match(/^Assistant: /gm)?.length ?? 0) + (role === 'analysis' ? 1 : 0);
    const fault =
      this.faults.get(`${role}:${nth}`) ??
      this.behaviour.fault?.({ role, nth, body, turn, last: lastMessage, persona: personaName });
    const arrivedAtMs = performance.timeOrigin + performance.now();
    this.arrivals.set(`${role}:${nth}`, arrivedAtMs);
    const remotePort = req.socket.remotePort ?? 0;
    this.onArrival?.(remotePort);
    let weights: string[] = [this.fullWeights.version];
    const record = (status: number, answer = ''): void => {
      this.calls.push({
        weights,
        role,
        nth,
        key,
        status,
        seed: body.seed ?? null,
        arrivedAtMs,
        answeredAtMs: performance.timeOrigin + performance.now(),
        messages: body.messages,
        answer,
        delivered: status !== 0 && !res.destroyed && !req.socket.destroyed,
        remotePort,
      });
    };

    // The policy's generation, as vLLM's scheduler runs it across a pause (FakeFullWeights.generation);
    // the simulator's calls stand for another server, which a policy reload does not hold.
    const generate = async () => {
      if (fault === 'hold') {
        this.held.push(res);
        await new Promise<void>((resolve) => this.releaseHeld.push(resolve));
        if (res.destroyed || res.writableEnded) return false;
      }
      const latencyMs = this.behaviour.latencyFor
        ? this.behaviour.latencyFor({ role, nth, body, turn, last: lastMessage, persona: personaName })
        : this.behaviour.latencyMs;
      if (latencyMs) await new Promise((r) => setTimeout(r, latencyMs));
      return true;
    };
    const generated =
      role === 'policy' ? await this.fullWeights.generation(generate) : { value: await generate(), weights };
    weights = generated.weights;
    if (!generated.value) return record(0);
    if (fault === '429') {
      record(429);
      return this.send(res, 429, { error: { message: 'rate limited', type: 'rate_limit_error' } });
    }
    if (fault === '500') {
      record(500);
      return this.send(res, 500, { error: { message: 'internal error', type: 'server_error' } });
    }
    if (fault === '401') {
      record(401);
      return this.send(res, 401, { error: { message: 'invalid api key', type: 'authentication_error' } });
    }
    if (fault === '404') {
      record(404);
      return this.send(res, 404, { error: { message: `model ${body.model} does not exist`, type: 'not_found_error' } });
    }
    if (fault === 'timeout') {
      // Never answer: the client's timeout fires; the socket is dropped when the server closes.
      record(0);
      this.held.push(res);
      return;
    }

    const ctx: CallContext = { role, nth, body, turn, last: lastMessage, persona: personaName };
    let content: string;
    if (fault === 'malformed') {
      content = 'Sorry, I cannot do that. {not json';
    } else if (role === 'analysis') {
      const answer = (this.behaviour.analysis ?? DEFAULT_BEHAVIOUR.analysis)(ctx);
      const fields = {
        assistantIntent: 'to comfort me',
        goalFit: answer.emotionChange >= 0 ? 'close to what I need' : 'misses the point',
        innerThoughts: answer.innerThoughts ?? `turn ${turn} thoughts`,
        emotionChange: answer.emotionChange,
      };
      content =
        fault === 'labelled'
          ? `Assistant intent: ${fields.assistantIntent}\nGoal fit: ${fields.goalFit}\nInner thoughts: ${fields.innerThoughts}\nEmotion change: ${fields.emotionChange >= 0 ? '+' : ''}${fields.emotionChange}`
          : fault === 'plain-json'
            ? `Here is my analysis:\n\`\`\`json\n${JSON.stringify(fields)}\n\`\`\``
            : JSON.stringify(fields);
    } else {
      content = (this.behaviour[role] ?? DEFAULT_BEHAVIOUR[role])(ctx);
    }
    if (this.behaviour.samples && fault === undefined) content = this.sampled(key, role, content);
    record(200, content);
    const promptTokens = messages.reduce((n, m) => n + Math.ceil(m.content.length / 4), 0);
    const completionTokens = Math.ceil(content.length / 4);
    this.send(res, 200, {
      id: `chatcmpl-fake-${role}-${nth}`,
      object: 'chat.completion',
      created: 1_700_000_000,
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null }],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    });
  }

  /** A sampling simulator's answer: what a request answered `n` times before gets, `n` > 0, differs. */
  private sampled(key: string, role: CallRole, content: string): string {
    const before = this.calls.filter((c) => c.key === key && c.status === 200 && c.delivered).length;
    if (before === 0) return content;
    if (role !== 'analysis') return `${content} (sample ${before + 1})`;
    const fields = JSON.parse(content) as { innerThoughts: string };
    return JSON.stringify({ ...fields, innerThoughts: `${fields.innerThoughts} (sample ${before + 1})` });
  }

  /** vLLM's answer for a name it does not serve (an adapter lost in a restart, or unloaded). */
  private modelMissing(res: ServerResponse, model: string): void {
    this.missing.push(model);
    this.send(res, 404, {
      error: { message: `The model \`${model}\` does not exist.`, type: 'NotFoundError', param: 'model', code: 404 },
    });
  }

  /** Attune's first-token probe after a publish: one token, not counted as a role's call. */
  private probeAnswer(res: ServerResponse, model: string): void {
    this.probes.push(model);
    this.send(res, 200, {
      id: 'chatcmpl-fake-probe',
      object: 'chat.completion',
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: '.' }, finish_reason: 'length', logprobs: null }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    });
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  }
}
