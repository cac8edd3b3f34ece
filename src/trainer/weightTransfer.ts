/** The trainer's routes of vLLM's native weight transfer (rank 0 joins the group, sends a step's tensors). */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { TrainerHttpError, trainerRequest, type TrainerEndpoint } from './trainerClient.js';

/** A step's tensors as vLLM's `/update_weights` takes them: its `update_info`. */
const stepUpdateInfoSchema = z.object({
  names: z.array(z.string()),
  dtype_names: z.array(z.string()),
  shapes: z.array(z.array(z.number().int())),
});
export type StepUpdateInfo = z.infer<typeof stepUpdateInfoSchema>;

const weightsSentSchema = z.object({ bytes: z.number(), seconds: z.number() }).passthrough();

/** Joining and sending wait for the other side inside NCCL, and a 7B model is some 15 GB. */
const TRANSFER_TIMEOUT_MS = 600_000;
/**
 * The send's deadline, told to the trainer: a vLLM worker that died mid-transfer would otherwise hold
 * the broadcast (and the trainer's next joins and sends) until NCCL's own timeout. Past it the
 * trainer tears the group down and answers 504 (retried: the retry makes the group again); it is
 * shorter than the call's own timeout so that answer, not a client-side abort, is what comes back.
 */
export const SEND_TIMEOUT_S = (TRANSFER_TIMEOUT_MS - 30_000) / 1000;

/**
 * A trainer call of the transfer. 501 (no vLLM or no CUDA beside the trainer) and other 4xx
 * (no such run or step, a LoRA run) fail for good (`PublishRefused`) with the trainer's message; a
 * 409 (rank 0 has no group: the trainer restarted) and 5xx (a 504: a send past its deadline) are
 * retried (`PublishFailed`), and the publish that retries makes the group again.
 */
async function call(trainer: TrainerEndpoint, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  try {
    return (await trainerRequest(trainer, method, path, body, TRANSFER_TIMEOUT_MS)).json;
  } catch (error) {
    if (!(error instanceof TrainerHttpError)) throw error;
    const refused =
      error.status === 501 || (error.status >= 400 && error.status < 500 && ![408, 409, 429].includes(error.status));
    if (refused)
      throw ApplicationFailure.create({
        message: `refused: ${error.message}`,
        type: 'PublishRefused',
        nonRetryable: true,
        details: [{ route: path, status: error.status }],
      });
    throw ApplicationFailure.retryable(error.message, 'PublishFailed');
  }
}

const stepPath = (runName: string, step: number) =>
  `/v1/runs/${encodeURIComponent(runName)}/checkpoints/${step}/weight-transfer`;

/** Rank 0 joins the group (it returns once vLLM's workers have joined too). */
export async function joinWeightTransferGroup(
  trainer: TrainerEndpoint,
  group: { master_address: string; master_port: number; world_size: number },
): Promise<void> {
  await call(trainer, 'POST', '/v1/weight-transfer/group', group);
}

/** The names, dtypes and shapes of the tensors `sendStepWeights` broadcasts, in that order. */
export async function stepUpdateInfo(trainer: TrainerEndpoint, runName: string, step: number): Promise<StepUpdateInfo> {
  const info = stepUpdateInfoSchema.safeParse(await call(trainer, 'GET', stepPath(runName, step)));
  if (!info.success)
    throw ApplicationFailure.nonRetryable(
      `trainer ${stepPath(runName, step)} answered no update_info: ${info.error.message}`,
      'PublishRefused',
    );
  const { names, dtype_names, shapes } = info.data;
  return { names, dtype_names, shapes };
}

/** Rank 0 broadcasts the step's tensors (it returns once vLLM's workers have received them, or at SEND_TIMEOUT_S). */
export async function sendStepWeights(
  trainer: TrainerEndpoint,
  runName: string,
  step: number,
): Promise<{ bytes: number; seconds: number }> {
  const body = { timeout_seconds: SEND_TIMEOUT_S };
  const sent = weightsSentSchema.safeParse(await call(trainer, 'POST', stepPath(runName, step), body));
  return sent.success ? { bytes: sent.data.bytes, seconds: sent.data.seconds } : { bytes: 0, seconds: 0 };
}
