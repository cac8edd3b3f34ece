import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The same credit settings written with the flat keys of earlier releases and as the group they
 * became; `mixed` with a discount and a weight off their defaults, so each of the three keys counts.
 */
export const FLAT_CREDIT_YAML = 'training:\n  credit: mixed\n  turnDiscount: 0.9\n  creditWeight: 0.3\n';
export const NESTED_CREDIT_YAML = 'training:\n  credit:\n    mode: mixed\n    turnDiscount: 0.9\n    weight: 0.3\n';

/** Writes files (name -> YAML text) into a fresh folder; returns the folder. */
export function configFolder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'attune-config-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
