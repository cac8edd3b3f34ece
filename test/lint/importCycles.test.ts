import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from '../../src/paths.js';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The repository files a module imports or re-exports, type-only imports included. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles.flatMap(({ fileName }) => {
    if (!fileName.startsWith('.')) return [];
    const target = resolve(dirname(file), fileName.replace(/\.js$/, '.ts'));
    if (existsSync(target)) return [target];
    const index = join(resolve(dirname(file), fileName), 'index.ts');
    return existsSync(index) ? [index] : [];
  });
}

/** Every import circle, each as the path of modules that leads back to its start. */
function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return cycles;
}

describe('lint: import cycles', () => {
  it('finds no import circle among the modules under src/', () => {
    const files = sourceFiles(join(REPO_ROOT, 'src'));
    assert.ok(files.length > 100, `found only ${files.length} source files`);
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
    const cycles = findCycles(graph).map((cycle) => cycle.map((file) => relative(REPO_ROOT, file)).join(' → '));
    assert.deepEqual(cycles, []);
  });

  it('reports a circle when one is there, and none in a chain', () => {
    const circle = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    assert.deepEqual(findCycles(circle), [['a', 'b', 'c', 'a']]);
    const chain = new Map([
      ['a', ['b', 'c']],
      ['b', ['c']],
      ['c', []],
    ]);
    assert.deepEqual(findCycles(chain), []);
  });

  it('follows type-only imports and re-exports', () => {
    const runMetrics = join(REPO_ROOT, 'src', 'core', 'runMetrics.ts');
    assert.ok(importsOf(runMetrics).some((file) => file.endsWith(join('training', 'algorithms.ts'))));
    const workflows = join(REPO_ROOT, 'src', 'workflows', 'index.ts');
    assert.ok(importsOf(workflows).some((file) => file.endsWith(join('workflows', 'rollout.ts'))));
  });
});
