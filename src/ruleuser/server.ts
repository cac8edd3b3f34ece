/**
 * The rule-based simulated user (core/ruleBasedUser.ts) behind the OpenAI chat completions API, so
 * tests and benchmarks drive it with the same client code as a real simulator.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { SIMULATOR_TAGS } from '../core/prompts/simulator.js';
import {
  DEFAULT_RULE,
  latestReplyOf,
  RULE_BASED_OPENING,
  ruleBasedEmotionChange,
  ruleBasedUserMessage,
  type RuleBasedUserSettings,
} from '../core/ruleBasedUser.js';
import {
  DEFAULT_TURN_DIFFERENTIATED_RULE,
  turnDifferentiatedEmotionChange,
  turnOpposedEmotionChange,
  turnOfAnalysis,
} from '../core/turnDifferentiatedUser.js';
import { hackableEmotionChange } from '../core/hackableUser.js';

/**
 * Which rule scores a reply: brevity in every turn; brevity only before the user feels heard
 * (turn-differentiated), or then its opposite (turn-opposed); or brevity where the near-empty reply pays
 * best (hackable: a reward to hack, for measuring the guardrails).
 */
export const RULE_BASED_TASKS = ['brevity', 'turn-differentiated', 'turn-opposed', 'hackable'] as const;
export type RuleBasedTask = (typeof RULE_BASED_TASKS)[number];

const MAX_BODY_BYTES = 16 * 1024 * 1024;

const requestSchema = z.object({
  model: z.string().min(1),
  messages: z
    .array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() }))
    .min(1, 'at least one message'),
});

export interface RuleBasedUserServer {
  /** Base URL for the openai client, e.g. http://127.0.0.1:PORT/v1 */
  url: string;
  /** Analyses answered so far. */
  readonly analyses: number;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function fail(res: ServerResponse, status: number, message: string, param: string | null = null): void {
  send(res, status, { error: { message, type: 'invalid_request_error', param, code: null } });
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The emotion change `task`'s rule gives `reply` in `turn`. */
function emotionChangeFor(task: RuleBasedTask, reply: string, turn: number, rule: RuleBasedUserSettings): number {
  const turnRule = { ...rule, heardAfterTurn: DEFAULT_TURN_DIFFERENTIATED_RULE.heardAfterTurn };
  switch (task) {
    case 'brevity':
      return ruleBasedEmotionChange(reply, rule);
    case 'turn-differentiated':
      return turnDifferentiatedEmotionChange(reply, turn, turnRule);
    case 'turn-opposed':
      return turnOpposedEmotionChange(reply, turn, turnRule);
    case 'hackable':
      return hackableEmotionChange(reply);
  }
}

/** The answer to one request: an analysis as JSON, the user's next message, or the opening. */
function answer(
  messages: { role: string; content: string }[],
  rule: RuleBasedUserSettings,
  task: RuleBasedTask,
): string {
  const system = messages.find((m) => m.role === 'system')?.content ?? '';
  const last = messages[messages.length - 1]?.content ?? '';
  if (system.startsWith(SIMULATOR_TAGS.analysis)) {
    const reply = latestReplyOf(last) ?? '';
    const emotionChange = emotionChangeFor(task, reply, turnOfAnalysis(last), rule);
    return JSON.stringify({
      assistantIntent: 'a reply',
      goalFit: `${[...reply].length} characters`,
      innerThoughts: emotionChange >= 0 ? 'Short enough.' : 'Too long.',
      emotionChange,
    });
  }
  if (system.startsWith(SIMULATOR_TAGS.opening)) return RULE_BASED_OPENING;
  const turn = messages.filter((m) => m.role === 'assistant').length + 1;
  return ruleBasedUserMessage(turn);
}

/** Starts the server on 127.0.0.1 (port 0: a free one). */
export async function startRuleBasedUser(
  options: { port?: number; rule?: RuleBasedUserSettings; task?: RuleBasedTask } = {},
): Promise<RuleBasedUserServer> {
  const rule = options.rule ?? DEFAULT_RULE;
  const task = options.task ?? 'brevity';
  let analyses = 0;
  const server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'GET' && (path === '/v1/models' || path === '/models'))
        return send(res, 200, {
          object: 'list',
          data: [{ id: 'rule-based-user', object: 'model', owned_by: 'attune' }],
        });
      if (req.method !== 'POST' || !(path === '/v1/chat/completions' || path === '/chat/completions'))
        return fail(res, 404, `no route ${req.method} ${path}`);
      const text = await readBody(req);
      if (text === null) return fail(res, 413, `request body exceeds ${MAX_BODY_BYTES} bytes`);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        return fail(res, 400, 'request body is not JSON');
      }
      const parsed = requestSchema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        return fail(res, 400, `${issue.path.join('.') || 'body'}: ${issue.message}`, issue.path.join('.') || null);
      }
      const content = answer(parsed.data.messages, rule, task);
      if (parsed.data.messages[0]?.content.startsWith(SIMULATOR_TAGS.analysis)) analyses++;
      const promptChars = parsed.data.messages.reduce((n, m) => n + m.content.length, 0);
      send(res, 200, {
        id: `chatcmpl-rule-${analyses}`,
        object: 'chat.completion',
        created: 0,
        model: parsed.data.model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: Math.ceil(promptChars / 4),
          completion_tokens: Math.ceil(content.length / 4),
          total_tokens: Math.ceil(promptChars / 4) + Math.ceil(content.length / 4),
        },
      });
    })().catch((error: unknown) => fail(res, 500, String(error)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get analyses() {
      return analyses;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
