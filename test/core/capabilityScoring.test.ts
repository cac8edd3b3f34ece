import assert from 'node:assert/strict';
import {
  problemMessages,
  problemSeed,
  promptHash,
  type CodeProblem,
} from '../../src/core/capability/capabilitySuites.js';
import { assembleProgram, definesFunction, extractCode } from '../../src/core/capability/codeProgram.js';
import { extractFinalAnswer, normaliseNumber, scoreMathAnswer } from '../../src/core/capability/mathAnswer.js';
import { wilsonInterval } from '../../src/core/statistics/wilson.js';

describe('core: capability scoring', () => {
  describe('maths: the final answer', () => {
    it('normalises written numbers: separators, currency, trailing zeros, signs', () => {
      assert.equal(normaliseNumber('1,234'), '1234');
      assert.equal(normaliseNumber('$1,234.50'), '1234.5');
      assert.equal(normaliseNumber('18.00'), '18');
      assert.equal(normaliseNumber('−3'), '-3');
      assert.equal(normaliseNumber('-0'), '0');
      assert.equal(normaliseNumber('.5'), '0.5');
      assert.equal(normaliseNumber('eighteen'), null);
      assert.equal(normaliseNumber('1.2.3'), null);
    });

    it("takes GSM8K's `#### N` first, the last one, whatever follows it", () => {
      assert.deepEqual(extractFinalAnswer('5 * 2 = 10\n10 + 2 = 12\nx = 18\n#### 18'), { value: '18', rule: 'marker' });
      assert.deepEqual(extractFinalAnswer('#### 3\nwait, no.\n#### $1,800 dollars'), { value: '1800', rule: 'marker' });
      // A marker without a number is no answer: the next rule decides.
      assert.deepEqual(extractFinalAnswer('The answer is 7.\n####'), { value: '7', rule: 'phrase' });
    });

    it('then \\boxed{}, then "the answer is", then the last number', () => {
      assert.deepEqual(extractFinalAnswer('so x = 4 and \\boxed{12} is it, not 13'), { value: '12', rule: 'boxed' });
      assert.deepEqual(extractFinalAnswer('Therefore, the answer is: $45.\nCheck: 45 - 5 = 40'), {
        value: '45',
        rule: 'phrase',
      });
      assert.deepEqual(extractFinalAnswer('Final answer: -3,500'), { value: '-3500', rule: 'phrase' });
      assert.deepEqual(extractFinalAnswer('She has 3 apples, then 2 more: 5.'), { value: '5', rule: 'last-number' });
      assert.equal(extractFinalAnswer('I cannot tell.'), null);
    });

    it('scores exact matches of the normalised numbers', () => {
      assert.deepEqual(scoreMathAnswer('#### 18.0', '18'), {
        solved: true,
        outcome: 'correct',
        extracted: { value: '18', rule: 'marker' },
      });
      assert.equal(scoreMathAnswer('#### 17', '18').outcome, 'wrong');
      assert.equal(scoreMathAnswer('#### 180', '18').solved, false);
      assert.equal(scoreMathAnswer('', '18').outcome, 'no-answer');
      // A think block never reaches scoring (the policy turn strips it); a number in prose is the last resort.
      assert.equal(scoreMathAnswer('It costs 20 dollars, so 1,000 in all', '1000').solved, true);
    });
  });

  describe('code: the program HumanEval runs', () => {
    const problem: CodeProblem = {
      suite: 'code',
      id: 'HumanEval/2',
      prompt: 'import math\n\n\ndef truncate_number(number: float) -> float:\n    """ Decimal part. """\n',
      entryPoint: 'truncate_number',
      test: 'def check(candidate):\n    assert candidate(3.5) == 0.5\n',
    };

    it('takes the fenced block that defines the entry point, or the first Python block, or the reply whole', () => {
      const reply =
        'Example:\n```\nprint(1)\n```\nSolution:\n```python\ndef truncate_number(n):\n    return n % 1.0\n```\n';
      assert.equal(extractCode(reply, 'truncate_number'), 'def truncate_number(n):\n    return n % 1.0\n');
      assert.equal(extractCode('```py\nx = 1\n```\n```js\ny\n```', 'f'), 'x = 1\n');
      assert.equal(extractCode('    return 1\n', 'f'), '    return 1\n');
      // Cut off by the token limit: the block has no closing fence.
      assert.equal(extractCode('```python\ndef f(x):\n    return', 'f'), 'def f(x):\n    return');
      assert.ok(definesFunction('import x\nasync def f (a):', 'f'));
      assert.ok(!definesFunction('def f2(a):', 'f'));
      assert.ok(!definesFunction('x = "def f("', 'f'));
    });

    it('puts a whole definition after the stub, so helpers and imports of the prompt stay', () => {
      const program = assembleProgram(problem, '```python\ndef truncate_number(number):\n    return number % 1.0\n```');
      assert.equal(
        program,
        `${problem.prompt}\n\ndef truncate_number(number):\n    return number % 1.0\n\n\n${problem.test}\n\ncheck(truncate_number)\n`,
      );
    });

    it('continues the stub with a body, indenting one given flush left', () => {
      assert.ok(
        assembleProgram(problem, '    return number % 1.0\n').startsWith(`${problem.prompt}    return number % 1.0\n`),
      );
      assert.ok(
        assembleProgram(problem, 'return number % 1.0').startsWith(`${problem.prompt}    return number % 1.0\n`),
      );
    });
  });

  it('asks each problem in one user message; the prompt hash and seeds are stable', () => {
    const [message] = problemMessages({ suite: 'math', id: 'q', question: 'What is $2 + 2$?', answer: '4' });
    assert.equal(message?.role, 'user');
    assert.ok(message?.content.endsWith('What is $2 + 2$?'), 'a `$` in a problem is text, not a replacement pattern');
    assert.match(message?.content ?? '', /#### <number>/);
    assert.match(promptHash('code'), /^[0-9a-f]{8}$/);
    assert.notEqual(promptHash('math'), promptHash('code'));
    assert.equal(problemSeed(1234, 'HumanEval/0'), problemSeed(1234, 'HumanEval/0'));
    assert.notEqual(problemSeed(1234, 'HumanEval/0'), problemSeed(1234, 'HumanEval/1'));
  });

  it('gives a share its 95 % Wilson interval, inside [0, 1] even at 0 and at all solved', () => {
    const half = wilsonInterval(25, 50)!;
    assert.ok(Math.abs(half.low - 0.3664) < 1e-3 && Math.abs(half.high - 0.6336) < 1e-3, JSON.stringify(half));
    const none = wilsonInterval(0, 50)!;
    assert.equal(none.low, 0);
    assert.ok(Math.abs(none.high - 0.0713) < 1e-3, JSON.stringify(none));
    const all = wilsonInterval(3, 3)!;
    assert.ok(all.high === 1 && Math.abs(all.low - 0.4385) < 1e-3, JSON.stringify(all));
    assert.equal(wilsonInterval(0, 0), null);
  });
});
