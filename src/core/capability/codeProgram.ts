import type { CodeProblem } from './capabilitySuites.js';

interface Fence {
  language: string;
  code: string;
}

/** Fenced blocks of a reply; the last one may be cut off by the token limit, so it may lack its closing fence. */
function fencedBlocks(reply: string): Fence[] {
  const blocks: Fence[] = [];
  const fence = /```[ \t]*([\w+#.-]*)[^\n]*\n([\s\S]*?)(?:```|$)/g;
  for (const match of reply.matchAll(fence))
    blocks.push({ language: (match[1] ?? '').toLowerCase(), code: match[2] ?? '' });
  return blocks;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Whether `code` defines the function itself (a whole definition) rather than only its body. */
export function definesFunction(code: string, entryPoint: string): boolean {
  return new RegExp(`^[ \\t]*(?:async[ \\t]+)?def[ \\t]+${escapeRegExp(entryPoint)}[ \\t]*\\(`, 'm').test(code);
}

/**
 * The code of a reply: the fenced block that defines the entry point, else the first Python (or
 * unlabelled) block, else the first block; a reply without fences is taken as code whole.
 */
export function extractCode(reply: string, entryPoint: string): string {
  const blocks = fencedBlocks(reply);
  if (blocks.length === 0) return reply;
  const chosen =
    blocks.find((b) => definesFunction(b.code, entryPoint)) ??
    blocks.find((b) => ['python', 'py', 'python3', ''].includes(b.language)) ??
    blocks[0]!;
  return chosen.code;
}

/** A body given without its indentation: indented one level, as the stub's body must be. */
function asBody(code: string): string {
  const firstLine = code.split('\n').find((line) => line.trim() !== '') ?? '';
  if (/^[ \t]/.test(firstLine)) return code;
  return code
    .split('\n')
    .map((line) => (line.trim() === '' ? line : `    ${line}`))
    .join('\n');
}

/**
 * The program HumanEval runs for one answer: the problem's prompt (its imports, helper functions and
 * the stub), the answer, the tests, and the call of `check` on the entry point. A whole definition
 * follows the stub and replaces it (a stub whose body is its docstring is valid Python); a body alone
 * continues the stub, as HumanEval's completions do.
 */
export function assembleProgram(problem: CodeProblem, reply: string): string {
  const code = extractCode(reply, problem.entryPoint);
  const solution = definesFunction(code, problem.entryPoint)
    ? `${problem.prompt}\n\n${code}`
    : `${problem.prompt}${asBody(code)}`;
  return `${solution}\n\n${problem.test}\n\ncheck(${problem.entryPoint})\n`;
}
