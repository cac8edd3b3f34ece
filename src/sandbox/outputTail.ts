/**
 * The last `capBytes` bytes of a stream and the count of all its bytes: a program that prints
 * without end costs the caller at most the cap, and the end of the output (where Python puts a
 * traceback) is what is kept.
 */
export class OutputTail {
  private tail = Buffer.alloc(0);
  private seen = 0;

  constructor(private readonly capBytes: number) {}

  push(chunk: Buffer): void {
    this.seen += chunk.length;
    const joined = chunk.length >= this.capBytes ? chunk : Buffer.concat([this.tail, chunk]);
    // A copy, so that a kept slice never pins a large chunk in memory.
    this.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - this.capBytes)));
  }

  /** Bytes seen in all, kept or not. */
  get totalBytes(): number {
    return this.seen;
  }

  get truncated(): boolean {
    return this.seen > this.tail.length;
  }

  text(): string {
    return this.tail.toString('utf8');
  }
}
