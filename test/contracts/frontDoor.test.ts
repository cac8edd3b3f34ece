import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');
const markdownFiles = [
  'README.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** GitHub's anchors: the heading's text, lower case, punctuation dropped, spaces as dashes. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (!fenced && heading)
      anchors.add(
        heading[1]!
          .trim()
          .toLowerCase()
          .replace(/[^\p{L}\p{N}_\- ]/gu, '')
          .replace(/ /g, '-'),
      );
  }
  return anchors;
}

describe('the README as a front door', () => {
  const readme = read('README.md');

  it('stays under 250 lines', () => {
    assert.ok(readme.split('\n').length < 250, `README.md has ${readme.split('\n').length} lines`);
  });

  it('opens with the demo command and the test command, the one CI runs', () => {
    const firstBlock = /```bash\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const commands = firstBlock
      .split('\n')
      .filter(Boolean)
      .map((line) => line.replace(/\s+#.*$/, '').trim());
    assert.deepEqual(commands, ['npm run demo', 'npm test']);
    const ci = read('.ci/run')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('#') && !/^(set|cd) /.test(line));
    assert.deepEqual(ci, [commands[1]]);
  });

  it('every relative link of the README and docs/ reaches a file, and a heading where it names one', () => {
    const broken: string[] = [];
    for (const file of markdownFiles)
      for (const [, target] of read(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#');
        const resolved = path ? relative(REPO_ROOT, join(REPO_ROOT, dirname(file), path)) : file;
        if (!existsSync(join(REPO_ROOT, resolved))) broken.push(`${file}: ${target} (no file)`);
        else if (anchor && resolved.endsWith('.md') && !anchorsOf(read(resolved)).has(anchor))
          broken.push(`${file}: ${target} (no such heading)`);
      }
    assert.deepEqual(broken, []);
  });
});
