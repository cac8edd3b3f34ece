import { emotionState, type EmotionState } from '../emotion.js';
import type { Scenario } from '../scenario.js';
import type { ChatMessage } from '../transcript.js';
import { quoteUtterance } from './quoting.js';

export type Language = Scenario['language'];

const STATE_WORDS: Record<Language, Record<EmotionState, string>> = {
  en: {
    S: 'fully satisfied: you feel understood and want to end warmly',
    A: 'good: open, warm, willing to share more',
    B: 'neutral to uneasy: guarded, testing whether the assistant gets it',
    C: 'low: frustrated, impatient, close to giving up',
    F: 'very low: you want to leave the conversation',
  },
  zh: {
    S: '非常满意：你感到被理解，想温暖地结束对话',
    A: '良好：愿意敞开心扉，分享更多',
    B: '一般偏不安：有所保留，在试探对方是否真的懂你',
    C: '低落：沮丧、不耐烦，快要放弃',
    F: '极差：你想离开这段对话',
  },
};

export function describeEmotion(emotion: number, language: Language): string {
  const state = emotionState(emotion);
  return language === 'zh'
    ? `当前情绪值 ${emotion}/100（状态 ${state}：${STATE_WORDS.zh[state]}）`
    : `current emotion ${emotion}/100 (state ${state}: ${STATE_WORDS.en[state]})`;
}

/** The profile block every simulator prompt starts from. */
export function profileBlock(s: Scenario): string {
  const p = s.persona;
  if (s.language === 'zh') {
    return [
      '【人物】',
      p.name ? `姓名：${p.name}` : null,
      p.age !== undefined ? `年龄：${p.age}` : null,
      p.occupation ? `职业：${p.occupation}` : null,
      p.habits ? `习惯：${p.habits}` : null,
      p.speakingStyle ? `说话风格：${p.speakingStyle}` : null,
      p.description ? `人物描述：${p.description}` : null,
      `性格类型：${s.personality}`,
      s.traits.length > 0 ? `特点：${s.traits.join('、')}` : null,
      `【背景】${s.background}`,
      `【对话目标】${s.goal}`,
      `【隐藏意图（绝不直接说出）】${s.hiddenIntention}`,
      s.reactions
        ? `【反应方式】高情绪：${s.reactions.highEmotion}；中等情绪：${s.reactions.mediumEmotion}；低情绪：${s.reactions.lowEmotion}；对方说中要害时：${s.reactions.onTarget}；对方答非所问时：${s.reactions.offTarget}`
        : null,
    ]
      .filter((line): line is string => line !== null)
      .join('\n');
  }
  return [
    'PERSONA',
    p.name ? `Name: ${p.name}` : null,
    p.age !== undefined ? `Age: ${p.age}` : null,
    p.occupation ? `Occupation: ${p.occupation}` : null,
    p.habits ? `Habits: ${p.habits}` : null,
    p.speakingStyle ? `Speaking style: ${p.speakingStyle}` : null,
    p.description ? `Profile: ${p.description}` : null,
    `Personality type: ${s.personality}`,
    s.traits.length > 0 ? `Traits: ${s.traits.join(', ')}` : null,
    `BACKGROUND: ${s.background}`,
    `STATED GOAL: ${s.goal}`,
    `HIDDEN INTENTION (never say it outright): ${s.hiddenIntention}`,
    s.reactions
      ? `HOW YOU REACT: when your emotion is high: ${s.reactions.highEmotion} | medium: ${s.reactions.mediumEmotion} | low: ${s.reactions.lowEmotion} | to replies that hit your hidden intention: ${s.reactions.onTarget} | to off-target replies: ${s.reactions.offTarget}`
      : null,
  ]
    .filter((line): line is string => line !== null)
    .join('\n');
}

/** Renders the dialogue so far from the simulated user's side, one quoted utterance per line. */
export function dialogueBlock(history: ChatMessage[], language: Language): string {
  if (history.length === 0) return language === 'zh' ? '（对话尚未开始）' : '(no messages yet)';
  const you = language === 'zh' ? '你' : 'You';
  const them = language === 'zh' ? 'AI助手' : 'Assistant';
  return history
    .filter((m) => m.role !== 'system')
    .map((m) => `${m.role === 'user' ? you : them}: ${quoteUtterance(m.content)}`)
    .join('\n');
}
