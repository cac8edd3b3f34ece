import type { ChatMessage } from '../transcript.js';
import type { Language } from './profile.js';

const PLAIN: Record<Language, string> = {
  en: 'You are a warm, perceptive conversation partner. Listen closely, respond to what the person actually needs, and keep replies natural and concise.',
  zh: '你是一位温暖、敏锐的聊天伙伴。认真倾听，回应对方真正的需要，回复自然、简洁。',
};

const THINK: Record<Language, string> = {
  en: 'Before each reply, think privately inside <think>…</think> about what the person feels and needs; then write your reply after the closing tag. Only the reply is shown to them.',
  zh: '每次回复前，先在 <think>…</think> 中私下思考对方的感受和需要，然后在结束标签之后写出回复。对方只会看到回复部分。',
};

export function defaultPolicySystemPrompt(language: Language, think: boolean): string {
  return think ? `${PLAIN[language]} ${THINK[language]}` : PLAIN[language];
}

/** The policy sees the system prompt and the visible dialogue only: earlier thinking is never in its prompt. */
export function policyMessages(systemPrompt: string, history: ChatMessage[]): ChatMessage[] {
  return [{ role: 'system', content: systemPrompt }, ...history.filter((m) => m.role !== 'system')];
}
