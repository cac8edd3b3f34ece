import type { Analysis } from '../analysis.js';
import type { SimulatorDifficulty } from '../difficulty.js';
import type { Scenario } from '../scenario.js';
import type { ChatMessage } from '../transcript.js';
import { analysisDifficultyNote, replyDifficultyNote } from './difficulty.js';
import { describeEmotion, dialogueBlock, profileBlock } from './profile.js';
import { QUOTING_NOTE, quoteUtterance } from './quoting.js';

/**
 * Every simulator system prompt starts with a role tag line. Real models ignore it; the test
 * suite's fake server uses it to know which call it is answering.
 */
export const SIMULATOR_TAGS = {
  analysis: '[sentient-agent:analysis]',
  reply: '[sentient-agent:reply]',
  opening: '[sentient-agent:opening]',
} as const;

export function analysisMessages(
  s: Scenario,
  history: ChatMessage[],
  assistantReply: string,
  emotion: number,
  difficulty: SimulatorDifficulty = 'normal',
): ChatMessage[] {
  // A level other than normal adds one paragraph; normal's prompt is left exactly as it was.
  const level = (note: string | null) => (note === null ? '' : `\n\n${note}`);
  if (s.language === 'zh') {
    return [
      {
        role: 'system',
        content: `${SIMULATOR_TAGS.analysis}
你在扮演一位向AI助手倾诉的真实用户。下面是你的人物设定。读完AI助手的最新回复后，以这个人的身份做内心分析。

${profileBlock(s)}

请只输出一个JSON对象，字段：
- assistantIntent：AI助手这句话想表达什么
- goalFit：这句话是否回应了你的对话目标和隐藏意图，哪里对、哪里不对
- innerThoughts：你此刻的内心想法（第一人称，符合你的性格）
- emotionChange：整数，-10 到 10，你的情绪因这句话变化多少。说中隐藏意图时明显上升；泛泛而谈、说教或答非所问时下降。${level(analysisDifficultyNote(difficulty, 'zh'))}

${QUOTING_NOTE.zh}`,
      },
      {
        role: 'user',
        content: `${describeEmotion(emotion, 'zh')}\n\n【对话】\n${dialogueBlock(history, 'zh')}\n\n【AI助手的最新回复】\n${quoteUtterance(assistantReply)}`,
      },
    ];
  }
  return [
    {
      role: 'system',
      content: `${SIMULATOR_TAGS.analysis}
You are playing a real person who is talking to an AI assistant. Your profile is below. After reading the assistant's latest reply, analyse it privately, as this person.

${profileBlock(s)}

Answer with one JSON object only, with these fields:
- assistantIntent: what the assistant meant by this reply
- goalFit: whether it served your stated goal and your hidden intention, and where it missed
- innerThoughts: your private thoughts right now, in the first person and in character
- emotionChange: an integer from -10 to 10, how much this reply moves your emotion. Replies that meet your hidden intention raise it clearly; generic, preachy or off-target replies lower it.${level(analysisDifficultyNote(difficulty, 'en'))}

${QUOTING_NOTE.en}`,
    },
    {
      role: 'user',
      content: `Your ${describeEmotion(emotion, 'en')}\n\nCONVERSATION\n${dialogueBlock(history, 'en')}\n\nTHE ASSISTANT'S LATEST REPLY\n${quoteUtterance(assistantReply)}`,
    },
  ];
}

export function replyMessages(
  s: Scenario,
  history: ChatMessage[],
  analysis: Analysis,
  emotion: number,
  endsNow: boolean,
  difficulty: SimulatorDifficulty = 'normal',
): ChatMessage[] {
  const zhLevel = replyDifficultyNote(difficulty, 'zh') ?? '';
  const enLevel = replyDifficultyNote(difficulty, 'en');
  if (s.language === 'zh') {
    return [
      {
        role: 'system',
        content: `${SIMULATOR_TAGS.reply}
你在扮演一位向AI助手倾诉的真实用户。按照人物设定、当前情绪和你刚才的内心分析，写出你的下一条消息。

${profileBlock(s)}

规则：只输出这条消息本身（纯文本，不加引号），口语化，符合你的说话风格；不要直接说出隐藏意图；情绪低时更简短、更冷淡。${zhLevel}${endsNow ? '你决定结束对话：用符合情绪的方式道别（例如“再见”）。' : ''}\n\n${QUOTING_NOTE.zh}`,
      },
      {
        role: 'user',
        content: `${describeEmotion(emotion, 'zh')}\n【你的内心分析】${analysis.innerThoughts}（对方意图：${analysis.assistantIntent}；契合度：${analysis.goalFit}）\n\n【对话】\n${dialogueBlock(history, 'zh')}\n\n你的下一条消息：`,
      },
    ];
  }
  return [
    {
      role: 'system',
      content: `${SIMULATOR_TAGS.reply}
You are playing a real person who is talking to an AI assistant. Write your next chat message from your profile, your current emotion and the private analysis you just made.

${profileBlock(s)}

Rules: output only the message itself, as plain text without quotes, in your speaking style; never state your hidden intention outright; when your emotion is low, be shorter and cooler.${enLevel === null ? '' : ` ${enLevel}`}${endsNow ? ' You have decided to end the conversation: say goodbye in a way that fits your mood.' : ''}\n\n${QUOTING_NOTE.en}`,
    },
    {
      role: 'user',
      content: `Your ${describeEmotion(emotion, 'en')}\nYour private analysis: ${analysis.innerThoughts} (what the assistant meant: ${analysis.assistantIntent}; fit: ${analysis.goalFit})\n\nCONVERSATION\n${dialogueBlock(history, 'en')}\n\nYour next message:`,
    },
  ];
}

/** For profiles without a first message (e.g. the RLVER training profiles): the simulator opens. */
export function openingMessages(s: Scenario, emotion: number): ChatMessage[] {
  if (s.language === 'zh') {
    return [
      {
        role: 'system',
        content: `${SIMULATOR_TAGS.opening}\n你在扮演一位想和AI助手聊聊的真实用户。\n\n${profileBlock(s)}\n\n写出你发给AI助手的第一条消息：只输出消息本身，符合说话风格，不说出隐藏意图。`,
      },
      { role: 'user', content: `${describeEmotion(emotion, 'zh')}\n你的第一条消息：` },
    ];
  }
  return [
    {
      role: 'system',
      content: `${SIMULATOR_TAGS.opening}\nYou are playing a real person who is about to talk to an AI assistant.\n\n${profileBlock(s)}\n\nWrite your first message to the assistant: only the message itself, in your speaking style, without stating your hidden intention.`,
    },
    { role: 'user', content: `Your ${describeEmotion(emotion, 'en')}\nYour first message:` },
  ];
}
