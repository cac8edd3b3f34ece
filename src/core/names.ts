/**
 * The rules for names an operator gives and for scenario ids, in one place for the CLI, the
 * workflows' inputs and the artifact store.
 *
 * Names (training runs, which are also the trainer's run ids; evaluations; evaluation schedules)
 * follow the trainer's run-id rule (`RUN_ID_RE` in trainer/src/attune_trainer/contract/schemas.py), so a name
 * accepted here is accepted there; test/contracts checks that both sides agree. An evaluation's
 * name is also the run name its transcripts are filed under when it belongs to no run. Such a name
 * is a valid artifact key part as it stands and cannot contain `@`, which separates run and step in
 * version names (`run@step`).
 *
 * Scenario ids are the file names of their scenarios (`<id>.yaml`) and parts of workflow ids and
 * artifact keys: the same rule in lower case, so two ids never name one file on a file system that
 * ignores case.
 */
export const NAME_MAX_LENGTH = 128;

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The rule in words, for error messages. */
export const NAME_RULE = `a letter or digit, then letters, digits, ".", "_" or "-"; at most ${NAME_MAX_LENGTH} characters`;

export const SCENARIO_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,127}$/;

export const SCENARIO_ID_RULE = `a lowercase letter or digit, then lowercase letters, digits, ".", "_" or "-"; at most ${NAME_MAX_LENGTH} characters`;

export type NameKind = 'name' | 'scenario id';

export function isValidName(name: string): boolean {
  return NAME_PATTERN.test(name);
}

export function isValidScenarioId(id: string): boolean {
  return SCENARIO_ID_PATTERN.test(id);
}

/** Why `value` is not a valid name (or scenario id), in words; null when it is valid. */
export function nameProblem(value: string, kind: NameKind = 'name'): string | null {
  if (value === '') return 'is empty';
  if (value === '.' || value === '..') return `"${value}" names a folder, not a ${kind}`;
  if (value.length > NAME_MAX_LENGTH)
    return `is ${value.length} characters long; at most ${NAME_MAX_LENGTH} are allowed`;
  const [pattern, rule] = kind === 'name' ? [NAME_PATTERN, NAME_RULE] : [SCENARIO_ID_PATTERN, SCENARIO_ID_RULE];
  return pattern.test(value) ? null : `must be ${rule}`;
}

/** Characters allowed in one part of an artifact key: safe in file names and object-store keys alike. */
export const KEY_PART_CHARS = 'A-Za-z0-9._@=-';
const UNSAFE_CHAR = new RegExp(`[^${KEY_PART_CHARS}]`, 'g');

/** A name made fit for one key part: every other character becomes `_`. */
export function keyPart(name: string): string {
  return name.replace(UNSAFE_CHAR, '_');
}

/**
 * The file or folder a name ends up as: its key part, compared without case because some file
 * systems (macOS, Windows) ignore it.
 */
export function storedNameKey(name: string): string {
  return keyPart(name).toLowerCase();
}

/** The names of `others` that `name` would share a file or folder with; empty when none. */
export function namesClashingWith(name: string, others: readonly string[]): string[] {
  const key = storedNameKey(name);
  return others.filter((other) => other !== name && storedNameKey(other) === key);
}

const VALID_KEY = new RegExp(`^[${KEY_PART_CHARS}]+(/[${KEY_PART_CHARS}]+)*$`);

/** Whether an artifact key is well formed: allowed characters only, no empty, `.` or `..` parts. */
export function isValidArtifactKey(key: string): boolean {
  return VALID_KEY.test(key) && key.split('/').every((part) => part !== '.' && part !== '..');
}
