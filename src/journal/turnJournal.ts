import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import type { ArtifactStore } from '../artifacts/store.js';
import { createLogger, type Logger } from '../log.js';
import { artifactFailure } from '../activities/artifactFailure.js';
import { canonicalJson } from './journalInput.js';
import {
  fenceOf,
  isTurnSuperseded,
  laterFence,
  newerTaskFailure,
  runFenceOf,
  TURN_SUPERSEDED,
  type Fence,
} from './turnJournalFence.js';
import { besideTurn, closedMarkerOf } from './turnJournalKeys.js';

export { isTurnSuperseded, TURN_SUPERSEDED, type AttemptFence } from './turnJournalFence.js';

/**
 * Where a local turn activity keeps the calls it has finished, so that a turn played again after
 * its worker died does not make them again. A local activity cannot heartbeat, and its result
 * reaches the history only when the workflow task completes, which may be several turns later; the
 * journal holds each call's result from the moment it returns.
 *
 * Each record names the input its calls were made from (a hash, src/journal/journalInput.ts): an
 * attempt made from another input treats it as absent. Each attempt claims the record before its
 * first call, with a compare-and-swap that raises the record's epoch, and writes only while its claim
 * is the latest: an older attempt still running (its workflow task timed out, its worker stalled or
 * cut off from Temporal) finds itself superseded at its next write and stops.
 */
export interface TurnJournal {
  /**
   * Claims `key` for an attempt made from input `inputHash`: what earlier attempts recorded from it,
   * and a fenced writer. `fence` orders attempts (the workflow task that scheduled it, see
   * AttemptFence): one older than the record's claim is superseded at once, whoever claims first.
   */
  claim(key: string, inputHash: string, fence?: number, fenceAt?: number): Promise<TurnClaim>;
}

export interface TurnClaim {
  /** The finished calls recorded from the same input by earlier attempts (unchecked: the reader checks their shape), or null. */
  readonly recorded: unknown;
  /** Why a record found was not reused (another input, an older format), for the log; null when none was ignored. */
  readonly ignored: string | null;
  /**
   * Replaces the record's calls with `finished` (every call finished so far) while this attempt's
   * claim is the latest, retrying a failed write in place; a superseded attempt's write fails with
   * TURN_SUPERSEDED and writes nothing.
   */
  write(finished: unknown): Promise<void>;
  /**
   * Fails with TURN_SUPERSEDED when a newer attempt has claimed the turn since; the attempt calls it
   * before each call, so a zombie that wakes up (a stalled process, a partition from Temporal) stops
   * before making a call the newer attempt makes too, not only at its next write.
   */
  confirm(): Promise<void>;
}

/** A record as an attempt writes it. */
const journalRecordSchema = z.object({
  input: z.string().min(1),
  attempt: z.object({
    epoch: z.number().int().nonnegative(),
    token: z.string().min(1),
    fence: z.number().int().nonnegative().optional(),
    fenceAt: z.number().nonnegative().optional(),
  }),
  finished: z.unknown(),
});
type JournalRecord = z.infer<typeof journalRecordSchema>;

/**
 * Test-only fault switch (the chaos soak's): `fail-once-after-call:FILE` fails a journal write that
 * follows a finished call, whole (its in-place retries included), once FILE exists, and removes FILE,
 * so it fires once whichever worker gets there first. Off unless set.
 */
export const JOURNAL_FAULT_INJECTION_ENV = 'ATTUNE_JOURNAL_FAULT_INJECTION';

function failOnceIfArmed(finished: unknown, env: NodeJS.ProcessEnv = process.env): void {
  const spec = env[JOURNAL_FAULT_INJECTION_ENV];
  if (!spec?.startsWith('fail-once-after-call:')) return;
  if (finished === null || typeof finished !== 'object' || Object.keys(finished).length === 0) return;
  try {
    rmSync(spec.slice('fail-once-after-call:'.length));
  } catch {
    return; // not armed, or another write took it
  }
  throw new Error(`${JOURNAL_FAULT_INJECTION_ENV}=${spec}: this journal write fails once (test-only fault)`);
}

/** Rounds of read-then-claim before an attempt gives up on others claiming the same turn. */
const CLAIM_ROUNDS = 20;
/** Pauses between in-place retries of a failed write (then the failure carries the calls). */
export const JOURNAL_WRITE_RETRY_DELAYS_MS = [100, 400, 1600];

function recordOf(text: string | null): JournalRecord | null {
  if (text === null) return null;
  try {
    return journalRecordSchema.safeParse(JSON.parse(text)).data ?? null;
  } catch {
    return null;
  }
}

/** What a record read tells a new attempt made from `inputHash`. */
function seenBy(text: string | null, inputHash: string): { epoch: number; recorded: unknown; ignored: string | null } {
  if (text === null) return { epoch: 0, recorded: null, ignored: null };
  const record = recordOf(text);
  if (!record) return { epoch: 0, recorded: null, ignored: 'it names no input (an older format, or unreadable)' };
  const { input, attempt, finished } = record;
  if (input !== inputHash)
    return {
      epoch: attempt.epoch,
      recorded: null,
      ignored: `its calls were made from another input (${input.slice(0, 12)}, this turn's is ${inputHash.slice(0, 12)})`,
    };
  return { epoch: attempt.epoch, recorded: finished, ignored: null };
}

/**
 * The journal in the run's artifact store (a local directory or S3: wherever the next worker can read
 * it), fenced by the store's conditional writes. Its failures are the store's, as a transcript write's
 * are (artifactFailure): a full disk fails the turn naming the store, so the run waits for the
 * operator instead of failing its dialogues.
 */
export function storeTurnJournal(
  store: ArtifactStore,
  retryDelaysMs: readonly number[] = JOURNAL_WRITE_RETRY_DELAYS_MS,
  log: Logger = createLogger({ component: 'turn-journal' }),
): TurnJournal {
  const io: StoreIo = async (key, call) => {
    try {
      return await call();
    } catch (error) {
      throw artifactFailure(error, store.locate(key));
    }
  };
  const at: JournalAccess = { store, io, retryDelaysMs, log };
  return {
    claim: async (key, inputHash, fenceLength, fenceAt) => {
      const fence = fenceOf(fenceLength, fenceAt);
      // A newer workflow task plays this dialogue (any turn of it): this attempt is a zombie's.
      if (fence !== undefined) await raiseRunFence(at, key, fence);
      let lastToken: string | null = null;
      for (let round = 1; round <= CLAIM_ROUNDS; round++) {
        const current = await io(key, () => store.getVersioned(key));
        const found = recordOf(current?.text ?? null);
        // Our claim of the round before landed although its answer was lost (an S3 retry then meets 412).
        if (current && found && found.attempt.token === lastToken)
          return fencedClaim(at, key, found, current.version, { recorded: found.finished, ignored: null });
        const seen = seenBy(current?.text ?? null, inputHash);
        const claimed = {
          input: inputHash,
          attempt: {
            epoch: seen.epoch + 1,
            token: randomUUID(),
            ...(fence !== undefined ? { fence: fence.fence, fenceAt: fence.at } : {}),
          },
          finished: seen.recorded ?? {},
        };
        lastToken = claimed.attempt.token;
        // A first claim carries no finished call: losing it to a power cut loses nothing (the next attempt
        // claims again), so it skips the flushes to disk. A record with calls is rewritten durably.
        const durable = current !== null;
        const version = await io(key, () => store.putJsonIf(key, claimed, current?.version ?? null, { durable }));
        if (version !== null) {
          // Unfenced (an attempt of the code before fences), a record it created belongs to a run that has
          // ended if the closed marker is there (see raiseRunFence, which checks it for fenced attempts).
          if (current === null && fence === undefined) await refuseClosed(at, key, () => store.remove(key));
          log.debug('turn claimed', { key, epoch: claimed.attempt.epoch, fence, round });
          return fencedClaim(at, key, claimed, version, seen);
        }
        // Another attempt wrote between our read and our claim: read again, so the newest claim wins.
      }
      throw ApplicationFailure.retryable(
        `the turn journal ${store.locate(key)}: other attempts kept claiming it`,
        'TurnJournalContended',
      );
    },
  };
}

type StoreIo = <T>(key: string, call: () => Promise<T>) => Promise<T>;

/** What the journal's steps share: the store, its accesses failing as the store's, the write retries, the log. */
interface JournalAccess {
  store: ArtifactStore;
  io: StoreIo;
  retryDelaysMs: readonly number[];
  log: Logger;
}

/**
 * Fails the attempt as superseded when the run's journal was swept (its rollout has ended), after
 * `leaveClosed` (what the attempt wrote there, removed so the journal stays a bare marker).
 */
async function refuseClosed(
  { store, io }: JournalAccess,
  key: string,
  leaveClosed: () => Promise<void>,
): Promise<void> {
  const closed = await io(key, () => store.getText(closedMarkerOf(key)));
  if (closed === null) return;
  await leaveClosed().catch(() => {}); // a leftover goes with the marker, a day later
  throw ApplicationFailure.nonRetryable(
    `the rollout has ended (its turn journal ${store.locate(closedMarkerOf(key))} is closed): this attempt stops`,
    TURN_SUPERSEDED,
  );
}

/** The run's fence record beside the turn record `key`: the newest workflow task that plays the dialogue. */
const runFenceKeyOf = (key: string) => besideTurn(key, 'fence.json');

/**
 * Raises the run's fence to `fence` (a compare-and-swap; it only grows), or fails the attempt as
 * superseded when a newer workflow task's attempt raised it past: that task plays the dialogue now,
 * whichever turn it is at, so a zombie cannot start a later turn the newer one has not claimed yet.
 */
async function raiseRunFence(at: JournalAccess, key: string, fence: Fence): Promise<void> {
  const { store, io, log } = at;
  const fenceKey = runFenceKeyOf(key);
  for (let round = 1; round <= CLAIM_ROUNDS; round++) {
    const current = await io(fenceKey, () => store.getVersioned(fenceKey));
    const newest = runFenceOf(current?.text ?? null);
    log.debug('run fence read for a claim', { key, fence, newest, round });
    if (newest !== null && laterFence(newest, fence)) throw newerTaskFailure(store.locate(fenceKey), fence, newest);
    if (newest !== null && !laterFence(fence, newest)) return;
    // Coordination, not data: a fence lost to a power cut went with every attempt it fenced.
    const raised = await io(fenceKey, () =>
      store.putJsonIf(fenceKey, { fence: fence.fence, at: fence.at }, current?.version ?? null, { durable: false }),
    );
    if (raised === null) continue;
    // No fence before ours: the dialogue's first claim, or a rollout whose journal was swept. The closed
    // marker tells them apart, read after our write: an attempt stopped between finding no fence and
    // writing one (SIGSTOP, a stalled host) writes it on waking, maybe after another worker played the
    // dialogue and the sweeper removed it. The sweeper writes the marker before it lists what to remove,
    // so a fence that outlived the sweep finds the marker (and goes again).
    if (current === null) await refuseClosed(at, key, () => store.remove(fenceKey));
    return;
  }
  throw ApplicationFailure.retryable(
    `the turn journal ${store.locate(fenceKey)}: other attempts kept raising it`,
    'TurnJournalContended',
  );
}

/** The failure of an attempt (`thisOne` says which) whose turn the attempt in `found` claimed: not retried. */
function supersededFailure(store: ArtifactStore, key: string, found: JournalRecord | null, thisOne: string) {
  const newer = found
    ? `epoch ${found.attempt.epoch}${found.attempt.fence !== undefined ? `, workflow task at event ${found.attempt.fence}` : ''}`
    : 'the record is gone';
  return ApplicationFailure.nonRetryable(
    `a newer attempt (${newer}; this one's ${thisOne}) claimed the turn journal ${store.locate(key)}: this attempt stops`,
    TURN_SUPERSEDED,
  );
}

/** The writer of an attempt that claimed `key` (its record `claimed`, at `version`). */
function fencedClaim(
  { store, io, retryDelaysMs, log }: JournalAccess,
  key: string,
  claimed: JournalRecord,
  version: string,
  seen: { recorded: unknown; ignored: string | null },
): TurnClaim {
  let held = version;
  const writeOnce = async (finished: unknown): Promise<void> => {
    const record: JournalRecord = { ...claimed, finished };
    const next = await io(key, () => store.putJsonIf(key, record, held));
    if (next !== null) {
      held = next;
      return;
    }
    // Either our write landed although its answer was lost, or a newer attempt claimed the turn.
    const current = await io(key, () => store.getVersioned(key));
    const found = recordOf(current?.text ?? null);
    if (current && found?.attempt.token === claimed.attempt.token) {
      held = current.version;
      if (canonicalJson(found.finished) === canonicalJson(finished)) return;
      throw new Error(`the turn journal ${store.locate(key)} changed under its writer; writing again`);
    }
    throw superseded(found);
  };
  const superseded = (found: JournalRecord | null) =>
    supersededFailure(store, key, found, `epoch ${claimed.attempt.epoch}`);
  return {
    recorded: seen.recorded,
    ignored: seen.ignored,
    confirm: async () => {
      const fence = fenceOf(claimed.attempt.fence, claimed.attempt.fenceAt);
      if (fence !== undefined) {
        // One small read per call: a newer task that took the dialogue over raised the run's fence (or
        // the sweeper removed it with the journal). An attempt of this same task that replaced this one
        // (a local attempt past its timeout) is stopped at this one's next write instead.
        const newest = runFenceOf(await io(key, () => store.getText(runFenceKeyOf(key))));
        log.debug('run fence read for a confirmation', { key, fence, newest });
        if (newest === null || laterFence(newest, fence))
          throw newerTaskFailure(store.locate(runFenceKeyOf(key)), fence, newest);
        return;
      }
      const current = await io(key, () => store.getVersioned(key));
      if (current?.version === held) return;
      const found = recordOf(current?.text ?? null);
      // Our own write whose answer was lost still holds the claim.
      if (current && found?.attempt.token === claimed.attempt.token) held = current.version;
      else throw superseded(found);
    },
    write: async (finished) => {
      failOnceIfArmed(finished);
      for (let retry = 0; ; retry++) {
        try {
          return await writeOnce(finished);
        } catch (error) {
          if (isTurnSuperseded(error) || retry >= retryDelaysMs.length) throw error;
          await sleep(retryDelaysMs[retry]!);
        }
      }
    },
  };
}
