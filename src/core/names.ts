/**
 * The rule for names an operator gives: training runs (also the trainer's run id) and evaluation
 * schedules. It is the trainer's run-id rule (`RUN_ID_RE` in trainer/src/attune_trainer/schemas.py),
 * so a name accepted here is accepted there; test/contracts checks that both sides agree. Such a
 * name is also a valid artifact key part and cannot contain `@`, which separates run and step in
 * version names (`run@step`).
 */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export const NAME_MAX_LENGTH = 128;

/** The rule in words, for error messages. */
export const NAME_RULE = `a letter or digit, then letters, digits, ".", "_" or "-"; at most ${NAME_MAX_LENGTH} characters`;

export function isValidName(name: string): boolean {
  return NAME_PATTERN.test(name);
}
