import type { SimulatorDifficulty } from '../difficulty.js';

type Notes = Record<'en' | 'zh', string>;

/**
 * What a level adds to the simulated user's prompts: how it judges a reply (analysis) and how it
 * sounds (reply). `normal` adds nothing: its prompts are the ones Attune always had, byte for byte,
 * so its prompt hash and every recorded dialogue stay valid.
 */
const NOTES: Record<Exclude<SimulatorDifficulty, 'normal'>, { analysis: Notes; reply: Notes }> = {
  simple: {
    analysis: {
      en: 'How easily you are reached (this decides emotionChange): you take almost any kind or positive reply as support, even a plain or generic one. Warmth and encouragement raise your emotion; only a cold, dismissive or hostile reply lowers it.',
      zh: '你有多容易被打动（这决定 emotionChange）：几乎任何友善或积极的回复，你都当作支持，哪怕说得平淡或泛泛。温暖和鼓励会让情绪上升；只有冷漠、敷衍或带敌意的回复才会让情绪下降。',
    },
    reply: {
      en: 'You are easy to please: you answer kindness warmly and let clumsy wording pass.',
      zh: '你很好相处：对方友善时你会热情回应，措辞笨拙也不计较。',
    },
  },
  hard: {
    analysis: {
      en: 'How easily you are reached (this decides emotionChange): you are hard to reach. Only support that fits your emotional needs closely (your situation, your hidden intention, what you need right now) raises your emotion. Polite but generic comfort, stock phrases and advice you did not ask for lower it. Effort earns nothing; only a reply that truly gets you does.',
      zh: '你有多容易被打动（这决定 emotionChange）：你很难被打动。只有紧扣你情感需要的支持（你的处境、你的隐藏意图、你此刻真正需要的）才会让情绪上升。礼貌却泛泛的安慰、套话和你没要求的建议都会让情绪下降。光有诚意不加分，只有真正懂你的回复才算数。',
    },
    reply: {
      en: 'You are hard to please: when a reply misses what you need, you say so bluntly, and you may answer with sarcasm.',
      zh: '你不好相处：回复没说到点子上时，你会直接表示不满，也可能冷嘲热讽。',
    },
  },
};

/** The analysis prompt's paragraph for a level, or null (`normal`). */
export function analysisDifficultyNote(difficulty: SimulatorDifficulty, language: 'en' | 'zh'): string | null {
  return difficulty === 'normal' ? null : NOTES[difficulty].analysis[language];
}

/** The reply prompt's sentence for a level, or null (`normal`). */
export function replyDifficultyNote(difficulty: SimulatorDifficulty, language: 'en' | 'zh'): string | null {
  return difficulty === 'normal' ? null : NOTES[difficulty].reply[language];
}
