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
import { turnJournalKey, type TurnJournal } from './turnJournal.js';

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
export interface ResumedTurnInput extends TurnInput {
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
 * One dialogue turn as one activity (`rollout.activityPer: turn`): the policy's reply and the
 * simulator's two calls, run by `calls` (each bounded by its endpoint's gate in this process).
 * A regular activity heartbeats its finished calls, and keeps heartbeating while it waits for an
 * endpoint, so a dead worker is noticed within the heartbeat timeout. A local activity cannot
 * heartbeat: with a `journal` it writes its finished calls there after each one and reads them back
 * when the turn is played again (after a retry, or after its worker died and the workflow task ran
 * elsewhere); without one, its retry plays the turn again from the start, with the same seeds.
 */
export function createDialogueTurnActivities(calls: DialogueCalls, journal?: TurnJournal) {
  return {
    async playDialogueTurn({ finished: given, ...input }: ResumedTurnInput): Promise<PlayedTurn> {
      const context = Context.current();
      const resumable = !context.info.isLocal;
      const execution = context.info.workflowExecution;
      const journalKey = context.info.isLocal && journal && execution ? turnJournalKey(execution, input.turn) : null;
      /** What the turn is doing: a failure names it (the call it failed at, or the journal). */
      let failedAt: TurnFailurePoint | null = 'journal';
      let finished: FinishedCalls = {};
      const record = async () => {
        if (resumable) context.heartbeat(finished);
        else if (journalKey) await journal!.write(journalKey, finished);
      };
      /** The call's result, made unless `finished` holds it, then recorded (heartbeat or journal). */
      const made = async <K extends TurnPhase>(call: K, make: () => Promise<NonNullable<FinishedCalls[K]>>) => {
        if (finished[call] === undefined) {
          failedAt = call;
          finished[call] = await make();
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
        finished = resumable
          ? finishedCallsFrom(context, context.info.heartbeatDetails ?? given, 'heartbeat details')
          : journalKey
            ? finishedCallsFrom(context, await journal!.read(journalKey), `the turn journal ${journalKey}`)
            : {};
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
        if (!(error instanceof ApplicationFailure) || failedAt === null) throw error;
        // The finished calls travel with a regular activity's failure, so a turn that waited for an
        // operator and is played again after its retries ran out does not make them again (a local
        // turn has its journal for that).
        const carried = resumable && Object.keys(finished).length > 0 ? finished : null;
        const failure: TurnFailure = { failedAt };
        throw ApplicationFailure.create({
          message: error.message,
          type: error.type ?? undefined,
          nonRetryable: error.nonRetryable ?? undefined,
          nextRetryDelay: error.nextRetryDelay ?? undefined,
          details: [carried, failure],
          cause: error.cause,
        });
      } finally {
        if (keepAlive) clearInterval(keepAlive);
      }
    },
  };
}

export type DialogueTurnActivities = ReturnType<typeof createDialogueTurnActivities>;
