/**
 * Exact integer ranges as grammar alternatives.
 *
 * node-llama-cpp's JSON-schema grammar (3.22) ignores `minimum`/`maximum`, so an
 * `{"type":"integer","minimum":-10,"maximum":10}` field would decode to any integer. We build the
 * range ourselves, digit by digit (the same idea as llama.cpp's json-schema-to-grammar), so any
 * bound, one-sided or wide, is enforced without listing every value.
 */

/** One position in a pattern: a fixed string, or one digit in [from, to]. */
export type RangeAtom =
  { kind: 'literal'; text: string } | { kind: 'digits'; from: number; to: number; repeat: number };
/** One alternative: atoms matched in sequence. */
export type RangePattern = RangeAtom[];

/** Unbounded sides are capped here so every generated integer is exactly representable in JSON.parse. */
export const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

const lit = (text: string): RangeAtom => ({ kind: 'literal', text });
const digits = (from: number, to: number, repeat = 1): RangeAtom => ({ kind: 'digits', from, to, repeat });

/** Numbers of equal length a <= b (strings of digits, may have inner zeros): patterns matching exactly [a, b]. */
function sameLength(a: string, b: string): RangePattern[] {
  if (a.length === 0) return [[]];
  if (a === b) return [[lit(a)]];
  let i = 0;
  while (a[i] === b[i]) i++;
  const prefix: RangePattern = i > 0 ? [lit(a.slice(0, i))] : [];
  const da = Number(a[i]);
  const db = Number(b[i]);
  const restA = a.slice(i + 1);
  const restB = b.slice(i + 1);
  const r = restA.length;
  const tail: RangePattern = r > 0 ? [digits(0, 9, r)] : [];
  const lowIsFull = /^0*$/.test(restA);
  const highIsFull = /^9*$/.test(restB);
  const out: RangePattern[] = [];
  // Partial block under the first differing digit of a: a's digit followed by [restA, 99..9].
  if (!lowIsFull) for (const p of sameLength(restA, '9'.repeat(r))) out.push([...prefix, lit(String(da)), ...p]);
  const lowDigit = lowIsFull ? da : da + 1;
  const highDigit = highIsFull ? db : db - 1;
  // Whole blocks in between: any digits after.
  if (lowDigit <= highDigit) out.push([...prefix, digits(lowDigit, highDigit), ...tail]);
  // Partial block under b's digit: [00..0, restB].
  if (!highIsFull) for (const p of sameLength('0'.repeat(r), restB)) out.push([...prefix, lit(String(db)), ...p]);
  return out;
}

/** Non-negative [lo, hi], split by digit count so no alternative admits a leading zero. */
function nonNegative(lo: bigint, hi: bigint): RangePattern[] {
  const out: RangePattern[] = [];
  let start = lo;
  while (start <= hi) {
    const len = start.toString().length;
    const maxOfLen = 10n ** BigInt(len) - 1n;
    const end = hi < maxOfLen ? hi : maxOfLen;
    out.push(...sameLength(start.toString(), end.toString()));
    start = end + 1n;
  }
  return out;
}

/** Patterns matching exactly the decimal integers in [lo, hi] as JSON writes them (no "+", no "-0", no leading zeros). */
export function integerRangePatterns(lo: bigint, hi: bigint): RangePattern[] {
  if (lo > hi) throw new RangeError(`empty integer range [${lo}, ${hi}]`);
  const out: RangePattern[] = [];
  if (lo < 0n) {
    const magLo = hi < 0n ? -hi : 1n;
    for (const p of nonNegative(magLo, -lo)) out.push([lit('-'), ...p]);
  }
  if (hi >= 0n) out.push(...nonNegative(lo > 0n ? lo : 0n, hi));
  return out;
}

function gbnfLiteral(text: string): string {
  return JSON.stringify(text); // digits and '-' only, so JSON quoting is valid GBNF quoting
}

/** GBNF body (alternatives) for the range; callers wrap it in a rule. */
export function integerRangeGbnf(lo: bigint, hi: bigint): string {
  return integerRangePatterns(lo, hi)
    .map((pattern) =>
      pattern
        .map((atom) => {
          if (atom.kind === 'literal') return gbnfLiteral(atom.text);
          const cls = atom.from === atom.to ? gbnfLiteral(String(atom.from)) : `[${atom.from}-${atom.to}]`;
          return atom.repeat === 1 ? cls : `${cls}{${atom.repeat}}`;
        })
        .join(' '),
    )
    .join(' | ');
}

/** The same patterns as a JavaScript RegExp, so tests can check the construction exhaustively. */
export function integerRangeRegExp(lo: bigint, hi: bigint): RegExp {
  const alternatives = integerRangePatterns(lo, hi).map((pattern) =>
    pattern
      .map((atom) => {
        if (atom.kind === 'literal') return atom.text.replace(/-/g, '\\-');
        const cls = `[${atom.from}-${atom.to}]`;
        return atom.repeat === 1 ? cls : `${cls}{${atom.repeat}}`;
      })
      .join(''),
  );
  return new RegExp(`^(?:${alternatives.join('|')})$`);
}
