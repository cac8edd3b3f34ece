import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, extname, join, relative } from 'node:path';
import { parseDocument } from 'yaml';
import { describeIssues, scenarioSchema, type Scenario } from '../core/scenario.js';

export interface ScenarioProblem {
  file: string;
  /** Field path inside the file, when the problem is a field. */
  field?: string;
  message: string;
}

export interface LoadedLibrary {
  scenarios: Scenario[];
  files: Map<string, string>;
  problems: ScenarioProblem[];
}

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(full));
    else if (EXTENSIONS.has(extname(entry.name))) out.push(full);
  }
  return out.sort();
}

/** Parses one scenario file; problems name the file and the field. */
export function loadScenarioFile(file: string): { scenario?: Scenario; problems: ScenarioProblem[] } {
  let value: unknown;
  const text = readFileSync(file, 'utf8');
  if (extname(file) === '.json') {
    try {
      value = JSON.parse(text);
    } catch (error) {
      return { problems: [{ file, message: `invalid JSON: ${(error as Error).message}` }] };
    }
  } else {
    const doc = parseDocument(text);
    if (doc.errors.length > 0)
      return { problems: doc.errors.map((e) => ({ file, message: `YAML syntax error: ${e.message}` })) };
    value = doc.toJS();
  }
  const parsed = scenarioSchema.safeParse(value);
  if (!parsed.success) {
    return {
      problems: parsed.error.issues.map((issue, i) => {
        const line = describeIssues(parsed.error)[i] ?? issue.message;
        const field =
          issue.code === 'unrecognized_keys' ? [...issue.path, ...issue.keys].join('.') : issue.path.join('.');
        return { file, ...(field ? { field } : {}), message: line };
      }),
    };
  }
  const stem = basename(file, extname(file));
  if (stem !== parsed.data.id) {
    return { problems: [{ file, field: 'id', message: `id: "${parsed.data.id}" must equal the file name "${stem}"` }] };
  }
  return { scenario: parsed.data, problems: [] };
}

/** Loads every scenario under `dir` (recursively); duplicate ids are problems too. */
export function loadScenarioLibrary(dir: string): LoadedLibrary {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    return { scenarios: [], files: new Map(), problems: [{ file: dir, message: 'not a directory' }] };
  }
  const scenarios: Scenario[] = [];
  const files = new Map<string, string>();
  const problems: ScenarioProblem[] = [];
  for (const file of listFiles(dir)) {
    const result = loadScenarioFile(file);
    problems.push(...result.problems);
    if (!result.scenario) continue;
    const earlier = files.get(result.scenario.id);
    if (earlier) {
      problems.push({
        file,
        field: 'id',
        message: `id: "${result.scenario.id}" is also used by ${relative(process.cwd(), earlier)}`,
      });
      continue;
    }
    files.set(result.scenario.id, file);
    scenarios.push(result.scenario);
  }
  return { scenarios, files, problems };
}

/** Loads a library and fails on any problem, listing them all. */
export function requireScenarioLibrary(dir: string): Scenario[] {
  const { scenarios, problems } = loadScenarioLibrary(dir);
  if (problems.length > 0) {
    throw new Error(`invalid scenarios in ${dir}:\n${problems.map((p) => `  ${p.file}: ${p.message}`).join('\n')}`);
  }
  return scenarios;
}

export function findScenario(dirs: string[], id: string): Scenario {
  const seen: string[] = [];
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    const { scenarios } = loadScenarioLibrary(dir);
    const found = scenarios.find((s) => s.id === id);
    if (found) return found;
    seen.push(`${dir} (${scenarios.length})`);
  }
  throw new Error(`scenario "${id}" not found in ${seen.join(', ') || dirs.join(', ')}`);
}
