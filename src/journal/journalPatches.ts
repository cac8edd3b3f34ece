/**
 * The turn journal's patches: how rollouts recorded before each change keep replaying as they ran.
 * The journal (turnJournal.ts), its fence, its keys, its input hashes and its sweeper live beside
 * this file: a dialogue's durability has one home. Names only, so workflow code may import them.
 */

/** Rollouts started after this patch remove their local turns' journal once the turns are in the history. */
export const TURN_JOURNAL_FORGOTTEN_PATCH = 'turn-journal-forgotten';
/** Rollouts started after this patch leave their local turns' journal to the worker's sweeper, which removes it once they are closed. */
export const TURN_JOURNAL_SWEPT_PATCH = 'turn-journal-swept';

/**
 * Rollouts with local turns started after this patch journal the simulator's opening like a turn's
 * calls (`playDialogueOpening`), so a worker that takes over reuses it rather than writing another.
 */
export const OPENING_JOURNALLED_PATCH = 'opening-journalled';
