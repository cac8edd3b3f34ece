import { z } from 'zod';

/**
 * How a full fine-tuning step's weights reach vLLM: `checkpoint`, vLLM reloads the step's checkpoint
 * directory in place; `nccl`, the trainer's rank 0 broadcasts them to vLLM's workers (vLLM's native
 * weight transfer), with no file in between.
 */
export const FULL_WEIGHTS_TRANSPORTS = ['checkpoint', 'nccl'] as const;
export type FullWeightsTransportName = (typeof FULL_WEIGHTS_TRANSPORTS)[number];

/** The NCCL group of the trainer's rank 0 and one vLLM server's workers. */
export const ncclRendezvousSchema = z
  .strictObject({
    address: z
      .string()
      .min(1)
      .max(253)
      .describe(
        "The trainer's rank-0 host as the vLLM hosts reach it: rank 0 hosts the group's rendezvous (a TCP store) there.",
      ),
    port: z
      .number()
      .int()
      .min(1)
      .max(65535)
      .describe('The rendezvous port on that host: open it from the vLLM hosts to the trainer.'),
    vllmWorkers: z
      .number()
      .int()
      .min(1)
      .max(4095)
      .default(1)
      .describe("The vLLM server's GPU workers (tensor x pipeline x data parallel): the group is rank 0 and these."),
  })
  .describe('With `transport: nccl`: the NCCL group of the trainer and the vLLM server.');
export type NcclRendezvous = z.infer<typeof ncclRendezvousSchema>;
