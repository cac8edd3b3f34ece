import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { analysisSchema } from '../core/analysis.js';
import { playTurn, type DialogueCalls, type PlayedTurn, type TurnInput } from '../core/dialogueTurn.js';
import type { AnalysisResult, PolicyTurnResult, UserMessageResult } from '../core/transcript.js';
import { LIMITS } from '../config/limits.js';

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

/** A turn played again after a wait at its failed call: the calls it had finished (see src/workflows/outageWait.ts). */
export interface ResumedTurnInput extends TurnInput {
  finished?: FinishedCalls;
}

function finishedCallsFrom(context: Context, given: FinishedCalls | undefined): FinishedCalls {
  const details: unknown = context.info.heartbeatDetails ?? given;
  if (details === undefined || details === null) return {};
  const parsed = finishedCallsSchema.safeParse(details);
  if (parsed.success) return parsed.data as FinishedCalls;
  context.log.warn('ignoring heartbeat details this version cannot read; the turn starts again', {
    problem: parsed.error.issues[0]?.message,
  });
  return {};
}

/**
 * One dialogue turn as one activity (`rollout.activityPer: turn`): the policy's reply and the
 * simulator's two calls, run by `calls` (each bounded by its endpoint's gate in this process).
 * A regular activity heartbeats its finished calls, and keeps heartbeating while it waits for an
 * endpoint, so a dead worker is noticed within the heartbeat timeout. A local activity cannot
 * heartbeat: its retry plays the turn again from the start, with the same seeds.
 */
export function createDialogueTurnActivities(calls: DialogueCalls) {
  return {
    async playDialogueTurn({ finished: given, ...input }: ResumedTurnInput): Promise<PlayedTurn> {
      const context = Context.current();
      const resumable = !context.info.isLocal;
      const finished = resumable ? finishedCallsFrom(context, given) : {};
      const record = () => {
        if (resumable) context.heartbeat(finished);
      };
      /** `result`, once `finished` holds it and the heartbeat has it. */
      const recorded = <T>(result: T): T => {
        record();
        return result;
      };
      const keepAlive = resumable
        ? setInterval(record, (context.info.heartbeatTimeoutMs ?? LIMITS.turnHeartbeatTimeoutMs) / 3)
        : null;
      try {
        return await playTurn(
          {
            generatePolicyTurn: async (callInput) =>
              recorded((finished.policy ??= await calls.generatePolicyTurn(callInput))),
            analyzeAssistantReply: async (callInput) =>
              recorded((finished.analysis ??= await calls.analyzeAssistantReply(callInput))),
            writeUserMessage: async (callInput) =>
              recorded((finished.reply ??= await calls.writeUserMessage(callInput))),
          },
          input,
        );
      } catch (error) {
        // The finished calls travel with the failure, so a turn that waited for an operator and is
        // played again after its retries ran out does not make them again.
        if (!resumable || !(error instanceof ApplicationFailure) || Object.keys(finished).length === 0) throw error;
        throw ApplicationFailure.create({
          message: error.message,
          type: error.type ?? undefined,
          nonRetryable: error.nonRetryable ?? undefined,
          details: [finished],
          cause: error.cause,
        });
      } finally {
        if (keepAlive) clearInterval(keepAlive);
      }
    },
  };
}

export type DialogueTurnActivities = ReturnType<typeof createDialogueTurnActivities>;
