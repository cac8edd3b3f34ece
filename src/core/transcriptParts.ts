import { ApplicationFailure } from '@temporalio/common';
import { TRANSCRIPT_PART_BYTES } from './temporalLimits.js';
import type { Transcript, TranscriptTurn } from './transcript.js';

/** One run of consecutive turns of a transcript, written ahead of the rest. */
export interface TranscriptPart {
  runName: string | null;
  rolloutId: string;
  /** 0-based position of the part in its transcript. */
  index: number;
  /** The turn number of `turns[0]`. */
  firstTurn: number;
  turns: TranscriptTurn[];
}

/** The transcript's head and the turns not written yet, and how many parts came before them. */
export interface TranscriptTail {
  transcript: Transcript;
  parts: number;
}

/** UTF-8 length of a string, without Node or DOM APIs (workflow code calls it). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      // A surrogate pair: one 4-byte character.
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Collects a dialogue's finished turns and says when enough of them are due to be written as a
 * part. Deterministic (sizes of JSON text only), so a workflow can call it.
 */
export class TranscriptPartition {
  private pending: TranscriptTurn[] = [];
  private pendingBytes = 0;
  private written = 0;

  constructor(
    private readonly origin: { runName: string | null; rolloutId: string },
    private readonly limitBytes: number = TRANSCRIPT_PART_BYTES,
  ) {}

  /** Takes in a finished turn; true when the turns not yet written have reached the part size. */
  add(turn: TranscriptTurn): boolean {
    this.pending.push(turn);
    this.pendingBytes += utf8Length(JSON.stringify(turn));
    return this.pendingBytes >= this.limitBytes;
  }

  /** The turns not yet written, as the next part; they count as written from now on. */
  takePart(): TranscriptPart {
    const first = this.pending[0];
    if (first === undefined)
      throw ApplicationFailure.nonRetryable('no transcript turns to write', 'TranscriptOutOfOrder');
    const part: TranscriptPart = { ...this.origin, index: this.written, firstTurn: first.turn, turns: this.pending };
    this.written++;
    this.pending = [];
    this.pendingBytes = 0;
    return part;
  }

  /** How many parts were taken. */
  get parts(): number {
    return this.written;
  }

  /** The whole transcript's head with only the turns not yet written. */
  tail(transcript: Transcript): TranscriptTail {
    return { transcript: { ...transcript, turns: this.pending }, parts: this.written };
  }
}

/**
 * The whole transcript from its parts (in order) and its tail; throws when the turns do not follow
 * on from each other, which would mean a part is missing or stale.
 */
export function joinTranscript(parts: readonly TranscriptPart[], tail: TranscriptTail): Transcript {
  const turns: TranscriptTurn[] = [];
  for (const [i, part] of parts.entries()) {
    if (part.index !== i)
      throw ApplicationFailure.nonRetryable(
        `transcript part ${i} holds index ${part.index}`,
        'TranscriptPartsMismatch',
      );
    turns.push(...part.turns);
  }
  turns.push(...tail.transcript.turns);
  turns.forEach((turn, i) => {
    if (turn.turn !== i + 1)
      throw ApplicationFailure.nonRetryable(
        `transcript turn ${i + 1} is numbered ${turn.turn}: a part is missing or stale`,
        'TranscriptPartsMismatch',
      );
  });
  return { ...tail.transcript, turns };
}
