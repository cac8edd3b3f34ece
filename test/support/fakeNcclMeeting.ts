/**
 * Where the two sides of a fake NCCL collective meet: vLLM's worker (its `/init_weight_transfer_engine`
 * or `/update_weights`) and the trainer's rank 0 (its group join or broadcast). Each side waits for
 * the other, as inside NCCL, so a caller that makes the two calls one after the other instead of at
 * once is caught: the first side gives up at the deadline, as a real rendezvous times out.
 */
export class FakeNcclMeeting {
  private readonly waiting = new Map<string, { side: string; meet: (met: boolean) => void }>();

  constructor(private readonly deadlineMs = 3_000) {}

  /** Resolves true once the other side of `collective` arrives, false if it does not by the deadline. */
  arrive(collective: 'init' | 'update', side: 'vllm' | 'trainer'): Promise<boolean> {
    const other = this.waiting.get(collective);
    if (other && other.side !== side) {
      this.waiting.delete(collective);
      other.meet(true);
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(collective);
        resolve(false);
      }, this.deadlineMs);
      this.waiting.set(collective, {
        side,
        meet: (met) => {
          clearTimeout(timer);
          resolve(met);
        },
      });
    });
  }
}
