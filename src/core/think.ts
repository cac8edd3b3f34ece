export interface ParsedPolicyOutput {
  /** What the simulated user sees. Empty when malformed. */
  reply: string;
  thinking: string | null;
  malformed: boolean;
  /** Why the output was rejected, for the transcript. */
  problem?: string;
}

const THINK_BLOCK = /^\s*<think>([\s\S]*?)<\/think>([\s\S]*)$/;

/**
 * Think-then-say mode: exactly one leading `<think>…</think>` block followed by a non-empty reply.
 * Anything else (missing block, nested or repeated tags, empty reply) is malformed and scores 0.
 */
export function parseThinkThenSay(raw: string): ParsedPolicyOutput {
  const match = THINK_BLOCK.exec(raw);
  if (!match) return { reply: '', thinking: null, malformed: true, problem: 'missing leading <think>…</think> block' };
  const thinking = (match[1] ?? '').trim();
  const reply = (match[2] ?? '').trim();
  if (/<\/?think>/.test(thinking) || /<\/?think>/.test(reply)) {
    return { reply: '', thinking, malformed: true, problem: 'more than one think block' };
  }
  if (thinking.length === 0) return { reply: '', thinking, malformed: true, problem: 'empty think block' };
  if (reply.length === 0) return { reply: '', thinking, malformed: true, problem: 'no reply after the think block' };
  return { reply, thinking, malformed: false };
}

/** Plain mode: the whole output is the reply; a stray think block is stripped, an empty reply is malformed. */
export function parsePlainReply(raw: string): ParsedPolicyOutput {
  // Until none is left: removing one block can join the text around it into another
  // (`<<think>a</think>think>b</think>`), whose thought would otherwise reach the simulator.
  let stripped = raw;
  for (let before = ''; before !== stripped;) {
    before = stripped;
    stripped = stripped.replace(/<think>[\s\S]*?<\/think>/g, '');
  }
  stripped = stripped.trim();
  if (stripped.length === 0) return { reply: '', thinking: null, malformed: true, problem: 'empty reply' };
  return { reply: stripped, thinking: null, malformed: false };
}

export function parsePolicyOutput(raw: string, think: boolean): ParsedPolicyOutput {
  return think ? parseThinkThenSay(raw) : parsePlainReply(raw);
}
