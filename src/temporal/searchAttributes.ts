import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Custom search attributes, so operators can filter runs and rollouts in the UI. Safe to import from workflows. */
export const SEARCH_ATTRIBUTES = {
  kind: defineSearchAttributeKey('AttuneKind', SearchAttributeType.KEYWORD),
  runName: defineSearchAttributeKey('AttuneRunName', SearchAttributeType.KEYWORD),
  step: defineSearchAttributeKey('AttuneStep', SearchAttributeType.INT),
  phase: defineSearchAttributeKey('AttunePhase', SearchAttributeType.KEYWORD),
  meanReward: defineSearchAttributeKey('AttuneMeanReward', SearchAttributeType.DOUBLE),
  scenarioId: defineSearchAttributeKey('AttuneScenarioId', SearchAttributeType.KEYWORD),
  outcome: defineSearchAttributeKey('AttuneOutcome', SearchAttributeType.KEYWORD),
  finalEmotion: defineSearchAttributeKey('AttuneFinalEmotion', SearchAttributeType.DOUBLE),
} as const;

export const ALL_SEARCH_ATTRIBUTES = Object.values(SEARCH_ATTRIBUTES);

/** `temporal server start-dev --search-attribute` takes Name=Type with these type names. */
export function devServerSearchAttributeArgs(): string[] {
  const names: Record<string, string> = {
    KEYWORD: 'Keyword',
    INT: 'Int',
    DOUBLE: 'Double',
    TEXT: 'Text',
    BOOL: 'Bool',
    DATETIME: 'Datetime',
    KEYWORD_LIST: 'KeywordList',
  };
  return ALL_SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=${names[key.type] ?? 'Keyword'}`]);
}
