import assert from 'node:assert/strict';
import { parsePlainReply, parseThinkThenSay } from '../../src/core/think.js';

describe('think-then-say parsing', () => {
  it('splits thinking from the reply', () => {
    const parsed = parseThinkThenSay('<think>She feels blamed.</think>\nThat sounds exhausting.');
    assert.deepEqual(parsed, { reply: 'That sounds exhausting.', thinking: 'She feels blamed.', malformed: false });
  });
  it('rejects a missing block, an empty reply, an empty thought and repeated blocks', () => {
    assert.equal(parseThinkThenSay('Just a reply').malformed, true);
    assert.equal(parseThinkThenSay('<think>x</think>   ').malformed, true);
    assert.equal(parseThinkThenSay('<think> </think>reply').malformed, true);
    assert.equal(parseThinkThenSay('<think>a</think>b<think>c</think>d').malformed, true);
    assert.equal(parseThinkThenSay('<think>unclosed reply').malformed, true);
  });
  it('plain mode keeps the text and strips a stray think block', () => {
    assert.deepEqual(parsePlainReply('  Hello there. '), { reply: 'Hello there.', thinking: null, malformed: false });
    assert.equal(parsePlainReply('<think>x</think>Hi').reply, 'Hi');
    assert.equal(parsePlainReply('   ').malformed, true);
  });
  it('plain mode strips a think block that stripping another one put together', () => {
    assert.deepEqual(parsePlainReply('<<think>a</think>think>secret</think>Hi'), {
      reply: 'Hi',
      thinking: null,
      malformed: false,
    });
  });
});
