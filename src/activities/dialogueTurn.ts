import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { analysisSchema } from '../core/analysis.js';
import {
  playTurn,
  withoutPrompt,
  type DialogueCalls,
  type PlayedTurn,
  type TurnFailurePoint,
  type TurnInput,
  type TurnPhase,
} from '../core/dialogueTurn.js';
import type { AnalysisResult, PolicyTurnResult, UserMessageResult } from '../core/transcript.js';
import { LIMITS } from '../config/limits.js';
import { beforeRequest } from '../http/beforeRequest.js';
import { requestCheckLeaseMs } from '../core/requestCheckLease.js';
import { openingInputHash, turnInputHash, type OpeningInput } from '../journal/journalInput.js';
import { isTurnSuperseded, type AttemptFence, type TurnClaim, type TurnJournal } from '../journal/turnJournal.js';
import { turnJournalKey } from '../journal/turnJournalKeys.js';

const usageSchema = z.object({ prompt: z.number(), completion: z.number(), rateLimitWaitMs: z.number().optional() });

/**
 * The calls a turn activity has finished, sent as heartbeat details after each one so that the next
 * attempt (after a failed call, a timeout or a dead worker) resumes after them. Checked on the way
 * back in: details written by another version of this code are ignored rather than trusted.
 */
const finishedCallsSchema = z.object({
  policy: z
    .looseObject({
      raw: z.string(),
      reply: z.string(),
      thinking: z.string().nullable(),
      malformed: z.boolean(),
      model: z.string(),
      latencyMs: z.number(),
      usage: usageSchema,
    })
    .optional(),
  analysis: z
    .looseObject({
      analysis: analysisSchema,
      raw: z.string(),
      attempts: z.number(),
      latencyMs: z.number(),
      usage: usageSchema,
    })
    .optional(),
  reply: z.looseObject({ text: z.string(), latencyMs: z.number(), usage: usageSchema }).optional(),
});

/** The opening as its journal record holds it (turn 0). */
const openingRecordSchema = z.object({
  opening: z.looseObject({ text: z.string(), latencyMs: z.number(), usage: usageSchema }),
});

export interface FinishedCalls {
  policy?: PolicyTurnResult;
  analysis?: AnalysisResult;
  reply?: UserMessageResult;
}

/**
 * What a turn's failure carries beside its finished calls (details[1]): the call it failed at, or
 * the turn journal's read or write, so that a dialogue waiting for an operator names that call and
 * its endpoint (or the artifact store), not the whole turn.
 */
export interface TurnFailure {
  failedAt: TurnFailurePoint;
}

/** A turn played again after a wait at its failed call: the calls it had finished (see src/workflows/outageWait.ts). */
export interface ResumedTurnInput extends TurnInput, AttemptFence {
  finished?: FinishedCalls;
}

function finishedCallsFrom(context: Context, recorded: unknown, where: string): FinishedCalls {
  if (recorded === undefined || recorded === null) return {};
  const parsed = finishedCallsSchema.safeParse(recorded);
  if (parsed.success) return parsed.data as FinishedCalls;
  context.log.warn(`ignoring ${where} this version cannot read; the turn starts again`, {
    problem: parsed.error.issues[0]?.message,
  });
  return {};
}

/**
 * The finished calls an attempt goes on from, each set whole: mixing a policy reply of one set with an
 * analysis of another would record an analysis of a reply other than the one kept. The set with the
 * most calls wins (they were all made from the same input; the first named wins a tie).
 */
function furthest(...sets: FinishedCalls[]): FinishedCalls {
  return sets.reduce((best, set) => (Object.keys(set).length > Object.keys(best).length ? set : best), {});
}

/** Calls a local turn finished but could not journal (its write failed), kept for its next attempt in this worker. */
class UnwrittenCalls {
  private readonly byKey = new Map<string, { input: string; finished: unknown }>();

  keep(key: string, input: string, finished: unknown): void {
    this.byKey.delete(key);
    this.byKey.set(key, { input, finished });
    // A bound, in case turns whose writes failed are never played again here.
    if (this.byKey.size > UNWRITTEN_KEPT) this.byKey.delete(this.byKey.keys().next().value!);
  }

  /** The calls kept for `key` if they were made from `input`; taken out either way. */
  take(key: string, input: string): unknown {
    const kept = this.byKey.get(key);
    this.byKey.delete(key);
    return kept?.input === input ? kept.finished : null;
  }
}

const UNWRITTEN_KEPT = 1024;

/** Where a local turn's calls are journalled, and who reads them back. */
interface JournalContext {
  journal: TurnJournal;
  unwritten: UnwrittenCalls;
  /** How long a confirmed claim lets a request leave (src/core/requestCheckLease.ts). */
  checkLeaseMs: number;
}

/**
 * A local attempt's start: claims the record at `key` (so an older attempt still running is
 * fenced off) and goes on from the calls finished from the same input, whether journalled, kept
 * here after a failed write, or carried by the workflow after a wait.
 */
async function claimed(
  context: Context,
  at: JournalContext,
  key: string,
  input: string,
  given: FinishedCalls | undefined,
  { fence, fenceAt }: AttemptFence,
): Promise<{ claim: TurnClaim; finished: FinishedCalls }> {
  const claim = await at.journal.claim(key, input, fence, fenceAt);
  if (claim.ignored) context.log.warn(`not reusing the turn journal ${key}: ${claim.ignored}`);
  const finished = furthest(
    finishedCallsFrom(context, claim.recorded, `the turn journal ${key}`),
    finishedCallsFrom(context, at.unwritten.take(key, input), `the calls kept after a failed write of ${key}`),
    given ?? {},
  );
  return { claim, finished };
}

/**
 * A turn's failure as the workflow reads it: the calls it finished (details[0]: the next attempt
 * after a wait goes on from them) and where it failed (details[1]).
 */
function turnFailure(error: unknown, failedAt: TurnFailurePoint, carried: FinishedCalls | null): ApplicationFailure {
  const failure: TurnFailure = { failedAt };
  if (!(error instanceof ApplicationFailure))
    // A store's own error (not a failure it names): retried, with the calls carried.
    return ApplicationFailure.create({
      message: error instanceof Error ? error.message : String(error),
      type: error instanceof Error ? error.name : 'Error',
      details: [carried, failure],
      cause: error instanceof Error ? error : undefined,
    });
  return ApplicationFailure.create({
    message: error.message,
    type: error.type ?? undefined,
    nonRetryable: error.nonRetryable ?? undefined,
    nextRetryDelay: error.nextRetryDelay ?? undefined,
    details: [carried, failure],
    cause: error.cause,
  });
}

/**
 * One dialogue turn as one activity (`rollout.activityPer: turn`): the policy's reply and the
 * simulator's two calls, run by `calls` (each bounded by its endpoint's gate in this process).
 * A regular activity heartbeats its finished calls, and keeps heartbeating while it waits for an
 * endpoint, so a dead worker is noticed within the heartbeat timeout. A local activity cannot
 * heartbeat: with a `journal` it claims the turn's record, writes its finished calls there after
 * each one and reads them back when the turn is played again (after a retry, or after its worker
 * died and the workflow task ran elsewhere), if they were made from the same input; without one,
 * its retry plays the turn again from the start, with the same seeds. The opening (the simulator's
 * first message, `playDialogueOpening`) is journalled the same way, as turn 0.
 */
export function createDialogueTurnActivities(
  calls: DialogueCalls,
  journal?: TurnJournal,
  checkLeaseMs = requestCheckLeaseMs(LIMITS.localCallsWorkflowTaskTimeoutMs),
) {
  const journalled: JournalContext | null = journal ? { journal, unwritten: new UnwrittenCalls(), checkLeaseMs } : null;
  return {
    playDialogueTurn: (input: ResumedTurnInput) => playDialogueTurn(calls, journalled, input),
    playDialogueOpening: (input: OpeningInput & AttemptFence) => playDialogueOpening(calls, journalled, input),
  };
}

/** The journal key of the current local activity's turn, when it journals. */
function journalKeyOf(context: Context, at: JournalContext | null, turn: number): string | null {
  const execution = context.info.workflowExecution;
  return context.info.isLocal && at && execution ? turnJournalKey(execution, turn) : null;
}

async function playDialogueTurn(
  calls: DialogueCalls,
  at: JournalContext | null,
  { finished: given, fence, fenceAt, ...input }: ResumedTurnInput,
): Promise<PlayedTurn> {
  const context = Context.current();
  const resumable = !context.info.isLocal;
  const journalKey = journalKeyOf(context, at, input.turn);
  const inputHash = journalKey ? turnInputHash(input) : '';
  /** What the turn is doing: a failure names it (the call it failed at, or the journal). */
  let failedAt: TurnFailurePoint | null = 'journal';
  let finished: FinishedCalls = {};
  let claim: TurnClaim | null = null;
  const record = async () => {
    if (resumable) context.heartbeat(finished);
    else if (claim) await claim.write(finished);
  };
  /** The call's result, made unless `finished` holds it, then recorded (heartbeat or journal). */
  const made = async <K extends TurnPhase>(call: K, make: () => Promise<NonNullable<FinishedCalls[K]>>) => {
    if (finished[call] === undefined) {
      failedAt = call;
      finished[call] = await (claim ? afterConfirming(claim, at!.checkLeaseMs, make) : make());
    }
    failedAt = 'journal';
    await record();
    failedAt = null;
    return finished[call]!;
  };
  const keepAlive = resumable
    ? setInterval(() => void record(), (context.info.heartbeatTimeoutMs ?? LIMITS.turnHeartbeatTimeoutMs) / 3)
    : null;
  try {
    if (resumable) finished = finishedCallsFrom(context, context.info.heartbeatDetails ?? given, 'heartbeat details');
    else if (journalKey)
      ({ claim, finished } = await claimed(context, at!, journalKey, inputHash, given, { fence, fenceAt }));
    failedAt = null;
    const played = await playTurn(
      {
        generatePolicyTurn: (callInput) => made('policy', () => calls.generatePolicyTurn(callInput)),
        analyzeAssistantReply: (callInput) => made('analysis', () => calls.analyzeAssistantReply(callInput)),
        writeUserMessage: (callInput) => made('reply', () => calls.writeUserMessage(callInput)),
      },
      input,
    );
    return withoutPrompt(played);
  } catch (error) {
    if (failedAt === null || !(error instanceof Error)) throw error;
    if (journalFailures.has(error)) failedAt = 'journal';
    // A superseded attempt's calls are not the turn's: it stops without writing or carrying them.
    const superseded = isTurnSuperseded(error);
    const carried = !superseded && Object.keys(finished).length > 0 ? finished : null;
    // The finished calls travel with the failure, so a turn that waited for an operator and is played
    // again does not make them again; a local turn also keeps them here for its next attempt.
    if (carried && journalKey && failedAt === 'journal') at!.unwritten.keep(journalKey, inputHash, carried);
    if (!(error instanceof ApplicationFailure) && failedAt !== 'journal') throw error;
    throw turnFailure(error, failedAt, carried);
  } finally {
    if (keepAlive) clearInterval(keepAlive);
  }
}

/**
 * The simulator's opening of a scenario without a first message. A local activity (local turns)
 * journals it as turn 0, so a worker that takes over a dialogue whose first workflow task never
 * completed reuses it: turn 1's journalled policy reply answered that opening, not a new one.
 */
async function playDialogueOpening(
  calls: DialogueCalls,
  at: JournalContext | null,
  { scenarioId, scenarioHash, fence, fenceAt, ...callInput }: OpeningInput & AttemptFence,
): Promise<UserMessageResult> {
  const context = Context.current();
  const key = journalKeyOf(context, at, 0);
  if (!key) return calls.writeUserMessage(callInput);
  const inputHash = openingInputHash({ ...callInput, scenarioId, scenarioHash });
  const claim = await journalled(() => at!.journal.claim(key, inputHash, fence, fenceAt));
  if (claim.ignored) context.log.warn(`not reusing the opening journalled at ${key}: ${claim.ignored}`);
  const recorded =
    openingRecordSchema.safeParse(claim.recorded).data ??
    openingRecordSchema.safeParse(at!.unwritten.take(key, inputHash)).data;
  if (recorded) return recorded.opening as UserMessageResult;
  const opening = await afterConfirming(claim, at!.checkLeaseMs, () => calls.writeUserMessage(callInput)).catch(
    (error: unknown) => {
      throw error instanceof Error && journalFailures.has(error) ? turnFailure(error, 'journal', null) : error;
    },
  );
  try {
    await journalled(() => claim.write({ opening }));
  } catch (error) {
    if (!isTurnSuperseded(error)) at!.unwritten.keep(key, inputHash, { opening });
    throw error;
  }
  return opening;
}

/**
 * `make`, its claim confirmed as the last step before its request leaves (src/http/beforeRequest.ts):
 * an attempt superseded while it waited (a zombie woken up, a worker cut off from Temporal) sends
 * nothing, nor one stopped between the confirmation and the request for longer than `leaseMs` (it
 * confirms again). The confirmation's failure is what it throws; the LLM client would report it as a
 * failed connection.
 */
async function afterConfirming<T>(claim: TurnClaim, leaseMs: number, make: () => Promise<T>): Promise<T> {
  let refused: Error | null = null;
  const check = () =>
    claim.confirm().catch((error: unknown) => {
      refused = error instanceof Error ? error : new Error(String(error));
      throw refused;
    });
  try {
    return await beforeRequest.run({ check, leaseMs }, make);
  } catch (error) {
    if (refused === null) throw error;
    journalFailures.add(refused);
    throw refused;
  }
}

/** Failures of a confirmation (the journal's, not the call's): the dialogue waits at the store. */
const journalFailures = new WeakSet<Error>();

/** A journal access whose failure names the journal (failedAt), so a dialogue waits at the store, not at the simulator. */
async function journalled<T>(io: () => Promise<T>): Promise<T> {
  try {
    return await io();
  } catch (error) {
    throw error instanceof Error ? turnFailure(error, 'journal', null) : error;
  }
}

export type DialogueTurnActivities = ReturnType<typeof createDialogueTurnActivities>;
