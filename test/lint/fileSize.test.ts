import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';

/** Small files with one job each: no source file over this many lines. */
const MAX_LINES = 400;

function sourceFiles(dir: string, extension: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === '__pycache__' ? [] : sourceFiles(path, extension);
    return entry.name.endsWith(extension) ? [path] : [];
  });
}

describe('source file size', () => {
  it(`keeps every file under src/ and trainer/src/ at ${MAX_LINES} lines or fewer`, () => {
    const files = [
      ...sourceFiles(join(REPO_ROOT, 'src'), '.ts'),
      ...sourceFiles(join(REPO_ROOT, 'trainer', 'src'), '.py'),
    ];
    assert.ok(files.length > 100, `found only ${files.length} source files`);
    const long = files.flatMap((file) => {
      const lines = readFileSync(file, 'utf8').split('\n').length - 1;
      return lines > MAX_LINES ? [`${relative(REPO_ROOT, file)}: ${lines} lines`] : [];
    });
    assert.deepEqual(long, []);
  });
});
