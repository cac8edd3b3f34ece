import assert from 'node:assert/strict';
import { terminalSafe } from '../../src/core/terminalText.js';

describe('core: terminal-safe text', () => {
  it('escapes ESC sequences, C0 but newline and tab, DEL, C1 and bidi controls, visibly', () => {
    assert.equal(terminalSafe('a\u001b[2Jb'), 'a\\x1b[2Jb');
    assert.equal(terminalSafe('\u001b]0;pwned\u0007'), '\\x1b]0;pwned\\x07');
    assert.equal(terminalSafe('over\rwrite\b\u0000'), 'over\\x0dwrite\\x08\\x00');
    assert.equal(terminalSafe('\u007f\u0080\u009b31m\u0085'), '\\x7f\\x80\\x9b31m\\x85');
    assert.equal(
      terminalSafe('\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069'),
      '\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069',
    );
  });

  it('leaves ordinary text, newlines, tabs, accents, Chinese and emoji as they are', () => {
    for (const text of ['line one\nline two\tend', 'émotion déçue', '我今天很难过。', 'ok 👍', '\u200d\u2065\u206a'])
      assert.equal(terminalSafe(text), text);
  });

  it('leaves no control character in any input', () => {
    let all = '';
    for (let c = 0; c < 0x2100; c++) all += String.fromCharCode(c);
    const safe = terminalSafe(all);
    assert.doesNotMatch(safe, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
  });
});
