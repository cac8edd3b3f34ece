/**
 * Every LLM call counted: the fake simulator and the proxy in front of the policy log each request
 * (a key hashing its content, its messages, its answer, whether the answer reached a connected
 * client, and the client's TCP port, turned here into the worker process that made it). At the end
 * the calls are matched against every transcript in the store.
 *
 * - A call is *answered* when it got a 200 that went to a client still connected (a killed worker's
 *   socket is closed before the answer, so its call in flight is not answered).
 * - A *finished call made twice*: a request (same key) answered more than once, not counting answers
 *   to a worker process inside a fault window (see `ProcessFault`): a stopped or cut-off worker's
 *   calls from its fault until it is superseded, a killed worker's call answered just before the kill.
 * - A *superseded call*: a call made (arrived, whatever its answer) by a worker inside a fault window
 *   after another worker process had made a call of the same dialogue since the fault, and made by
 *   another worker too (same key): the stale attempt went on with what the newer one plays. (A call
 *   it had under way when the other took over is not one: it started before; its answer is counted as
 *   *unrecorded*. With one activity per call a woken worker's new activities are not: no other
 *   worker makes them.)
 * - An *unrecorded* answer: an answered call whose answer reached no transcript (informational).
 * - A transcript *fails to chain* when a recorded turn was not produced from the transcript before
 *   it: its policy reply is not the answer to a request whose messages are the recorded prompt, that
 *   prompt is not the opening and the turns before, or its analysis or the user's reply answered a
 *   request about another reply, or the opening is not an answer the simulator gave.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { Transcript } from '../../src/core/transcript.js';
import type { ProxiedCall } from '../../test/support/outageProxy.js';

/** One chat completion, from the simulator fake or the policy proxy. */
/** A call as the fake simulator or the policy's proxy logged it (the proxy's record, with where it came from). */
export interface LoggedCall extends ProxiedCall {
  source: 'simulator' | 'policy';
  role: string;
}

/** A fault on a worker process: its calls answered in [fromMs, toMs] may be repeated by whoever takes over. */
export interface ProcessFault {
  n: number;
  kind: string;
  pid: number;
  fromMs: number;
  toMs: number;
  /**
   * A killed worker: every answer its dialogues' journals held right after the kill (before another
   * worker started). Those calls had finished, so a repeat of one counts; an answer the worker got
   * but had not journalled yet is in the window and may be made again.
   */
  journalled?: ReadonlySet<string>;
}

/** Which worker process owns a client TCP port, read from /proc when a call arrives. */
export class CallOwners {
  private readonly seen = new Map<number, { pid: number; atMs: number }[]>();
  /** The process that made the latest call noted (null if none was found). */
  lastPid: number | null = null;

  constructor(private readonly pids: () => number[]) {}

  /** Notes the owner of `port` now (call it as the request arrives, while the connection is open). */
  note(port: number): void {
    const pid = ownerOfPort(port, this.pids());
    this.lastPid = pid;
    if (pid === null) return;
    const list = this.seen.get(port) ?? [];
    list.push({ pid, atMs: performance.timeOrigin + performance.now() });
    this.seen.set(port, list);
  }

  /** The process that made a call on `port` answered at `atMs` (its latest owner noted before then). */
  ownerOf(port: number, atMs: number): number | null {
    const list = this.seen.get(port) ?? [];
    let owner: number | null = null;
    for (const entry of list) if (entry.atMs <= atMs) owner = entry.pid;
    return owner;
  }
}

function socketInodesOfPort(port: number): Set<string> {
  const inodes = new Set<string>();
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[1]?.endsWith(`:${hex}`) && fields[9] && fields[9] !== '0') inodes.add(fields[9]);
    }
  }
  return inodes;
}

function ownerOfPort(port: number, pids: number[]): number | null {
  const inodes = socketInodesOfPort(port);
  if (inodes.size === 0) return null;
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
        const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
        if (inode && inodes.has(inode)) return pid;
      } catch {
        // closed meanwhile
      }
    }
  }
  return null;
}

/** Counts per fault kind (calls attributed to a fault's window) and in total. */
export interface CallCounts {
  answered: number;
  madeTwice: number;
  superseded: number;
  /** Answered calls whose answer reached no transcript (a worker's call answered as it was killed or paused). */
  unrecorded: number;
  chainFailures: number;
  transcripts: number;
  /** Per fault kind: finished calls made twice and superseded calls in its windows, chaining failures of its step. */
  byKind: Record<string, { madeTwice: number; superseded: number; unrecorded: number; chainFailures: number }>;
  /** The first few problems, for the log. */
  problems: string[];
}

const canonical = (messages: { role: string; content: string }[]): string =>
  JSON.stringify(messages.map((m) => [m.role, m.content]));

/** The publish's first-token probe (one user message): not a dialogue's call. */
const isProbe = (call: LoggedCall): boolean => call.messages.length === 1 && call.messages[0]?.role === 'user';

interface Attributed extends LoggedCall {
  pid: number | null;
  /** The process fault whose window it was answered in, if any. */
  fault: ProcessFault | null;
}

/** The problems of one transcript's chain (empty when it chains), each marking the answers it used. */
function chainProblems(t: Transcript, answered: Attributed[], used: Set<Attributed>): string[] {
  const problems: string[] = [];
  const find = (source: string, role: string, answer: string, request: (c: Attributed) => boolean) =>
    answered.find((c) => c.source === source && c.role === role && c.answer === answer && request(c) && !used.has(c)) ??
    answered.find((c) => c.source === source && c.role === role && c.answer === answer && request(c));
  const mark = (call: Attributed | undefined, what: string) => {
    if (call) used.add(call);
    else problems.push(`${t.rolloutId}: ${what}`);
  };
  if (t.opening.writtenBySimulator)
    mark(
      find('simulator', 'opening', t.opening.text, () => true),
      'the opening is no answer the simulator gave',
    );
  const conversation: { role: string; content: string }[] = [];
  let userMessage = t.opening.text;
  for (const turn of t.turns) {
    if (turn.userMessage !== userMessage)
      problems.push(`${t.rolloutId} turn ${turn.turn}: user message is not the one before`);
    conversation.push({ role: 'user', content: userMessage });
    const prompt = turn.promptMessages.filter((m) => m.role !== 'system');
    const chains =
      prompt.length === conversation.length &&
      prompt.every(
        (m, i) =>
          m.role === conversation[i]!.role &&
          (m.content === conversation[i]!.content ||
            (m.role === 'assistant' && conversation[i]!.content.includes(m.content))),
      );
    if (!chains) problems.push(`${t.rolloutId} turn ${turn.turn}: the prompt is not the transcript up to it`);
    const prompted = canonical(turn.promptMessages);
    mark(
      find('policy', 'policy', turn.policy.raw, (c) => canonical(c.messages) === prompted),
      `turn ${turn.turn}: the policy reply answered no request made of its recorded prompt`,
    );
    // The simulator's prompts quote each utterance as a JSON string (src/core/prompts/quoting.ts).
    const about = (c: Attributed) => {
      const last = c.messages[c.messages.length - 1]?.content ?? '';
      return last.includes(JSON.stringify(turn.policy.reply)) && last.includes(JSON.stringify(t.opening.text));
    };
    if (turn.analysis)
      mark(
        find('simulator', 'analysis', turn.analysis.raw, about),
        `turn ${turn.turn}: the analysis answered no request about the recorded reply`,
      );
    if (turn.userReply)
      mark(
        find('simulator', 'reply', turn.userReply.text, about),
        `turn ${turn.turn}: the user's reply answered no request about the recorded reply`,
      );
    conversation.push({ role: 'assistant', content: turn.policy.raw });
    userMessage = turn.userReply?.text ?? '';
  }
  return problems;
}

/**
 * The counts over every logged call and transcript. `stepOf` gives a transcript's step fault kinds
 * (a chaining failure counts against the kinds injected into its step).
 */
export function countCalls(input: {
  calls: LoggedCall[];
  owners: CallOwners;
  processFaults: ProcessFault[];
  transcripts: Transcript[];
  kindsOfStep: (step: number | null) => string[];
  kindOfTime: (atMs: number) => string[];
}): CallCounts {
  const answered: Attributed[] = input.calls
    .filter((c) => c.status === 200 && c.delivered && !isProbe(c))
    .map((c) => {
      const pid = input.owners.ownerOf(c.remotePort, c.answeredAtMs);
      const fault =
        input.processFaults.find(
          (f) =>
            f.pid === pid &&
            c.answeredAtMs >= f.fromMs &&
            c.answeredAtMs <= f.toMs &&
            !(f.journalled?.has(c.answer) ?? false),
        ) ?? null;
      return { ...c, pid, fault };
    });
  const counts: CallCounts = {
    answered: answered.length,
    madeTwice: 0,
    superseded: 0,
    unrecorded: 0,
    chainFailures: 0,
    transcripts: input.transcripts.length,
    byKind: {},
    problems: [],
  };
  const kind = (k: string) => (counts.byKind[k] ??= { madeTwice: 0, superseded: 0, unrecorded: 0, chainFailures: 0 });
  const used = new Set<Attributed>();
  for (const t of input.transcripts) {
    const problems = chainProblems(t, answered, used);
    if (problems.length === 0) continue;
    counts.chainFailures++;
    for (const k of input.kindsOfStep(t.step)) kind(k).chainFailures++;
    counts.problems.push(...problems.slice(0, 2));
  }
  const byKey = new Map<string, Attributed[]>();
  for (const c of answered) byKey.set(`${c.source}:${c.key}`, [...(byKey.get(`${c.source}:${c.key}`) ?? []), c]);
  for (const copies of byKey.values()) {
    const counted = copies.filter((c) => c.fault === null);
    if (counted.length > 1) {
      counts.madeTwice += counted.length - 1;
      const kinds = input.kindOfTime(counted[1]!.answeredAtMs);
      for (const k of kinds.length > 0 ? kinds : ['(none)']) kind(k).madeTwice += counted.length - 1;
      counts.problems.push(
        `${copies[0]!.source} ${copies[0]!.role} call ${copies[0]!.key} answered ${counted.length}x (pids ${counted.map((c) => c.pid).join(',')})`,
      );
    }
  }
  for (const c of answered) {
    if (used.has(c)) continue;
    counts.unrecorded++;
    const kinds = c.fault ? [c.fault.kind] : input.kindOfTime(c.answeredAtMs);
    for (const k of kinds.length > 0 ? kinds : ['(none)']) kind(k).unrecorded++;
  }
  for (const c of supersededCalls(input.calls, input.owners, input.processFaults, input.transcripts)) {
    counts.superseded++;
    kind(c.fault.kind).superseded++;
    counts.problems.push(
      `${c.call.source} ${c.call.role} call ${c.call.key} made by pid ${c.call.pid} after its dialogue was taken over`,
    );
  }
  return counts;
}

/** Every transcript of `runName` in the store. */
export async function transcriptsOf(
  store: { list(prefix: string): Promise<string[]>; getJson<T>(key: string): Promise<T> },
  prefix: string,
): Promise<Transcript[]> {
  const keys = (await store.list(`${prefix}/`)).filter((k) => k.endsWith('.json'));
  return Promise.all(keys.map((k) => store.getJson<Transcript>(k)));
}

/** The dialogue a call belongs to: the opening (as its text stands in the call's messages). */
function dialogueOf(call: LoggedCall, openings: string[]): string | null {
  if (call.role === 'opening') return call.answer || null;
  for (const o of openings)
    if (call.messages.some((m) => m.role !== 'system' && (m.content === o || m.content.includes(JSON.stringify(o)))))
      return o;
  return null;
}

/** Calls made by stale attempts: see the module's comment. */
function supersededCalls(
  calls: LoggedCall[],
  owners: CallOwners,
  processFaults: ProcessFault[],
  transcripts: Transcript[],
): { call: LoggedCall & { pid: number | null }; fault: ProcessFault }[] {
  const openings = [...new Set(transcripts.map((t) => t.opening.text))].filter((o) => o.length >= 12);
  const made = calls
    .filter((c) => !isProbe(c))
    .map((c) => {
      const atMs = c.answeredAtMs;
      return { ...c, pid: owners.ownerOf(c.remotePort, atMs), dialogue: dialogueOf(c, openings) };
    });
  const out: { call: LoggedCall & { pid: number | null }; fault: ProcessFault }[] = [];
  for (const fault of processFaults) {
    const takenOver = new Map<string, number>();
    for (const c of made) {
      if (c.dialogue === null || c.pid === fault.pid || c.arrivedAtMs < fault.fromMs) continue;
      if (!takenOver.has(c.dialogue)) takenOver.set(c.dialogue, c.arrivedAtMs);
    }
    for (const c of made) {
      if (c.pid !== fault.pid || c.dialogue === null || c.arrivedAtMs > fault.toMs) continue;
      const since = takenOver.get(c.dialogue);
      // Made after another worker had made a call of its dialogue (that one's attempt had claimed the
      // turn), and made by that one too: the stale attempt played on what the newer one plays.
      const twin = made.some((o) => o.pid !== fault.pid && o.source === c.source && o.key === c.key);
      if (since !== undefined && c.arrivedAtMs > since && twin) out.push({ call: c, fault });
    }
  }
  return out;
}
