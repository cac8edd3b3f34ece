import { runRollout } from '../../client/rollouts.js';
import { rolloutSettingsFromConfig } from '../../config/rolloutSettingsFromConfig.js';
import { nameProblem } from '../../core/names.js';
import type { Transcript } from '../../core/transcript.js';
import { findScenario } from '../../scenarios/library.js';
import { CONFIG_FLAGS, flagHelp, intOption, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext } from '../context.js';
import { renderTranscript } from '../render/transcript.js';
import { withRuntime, workflowUiUrl } from '../runtime.js';
import { terminalSafe } from '../../core/terminalText.js';

export const ROLLOUT_FLAGS = {
  scenario: { type: 'string', short: 's', value: 'ID', help: 'scenario id (required)' },
  scenarios: {
    type: 'string',
    value: 'DIR',
    help: "scenario directory (default: the config's train and eval splits)",
  },
  seed: { type: 'string', value: 'N', help: 'rollout seed (default: derived from the time)' },
  'max-turns': { type: 'string', value: 'N', help: 'turn limit (default: rollout.dialogue.maxTurns)' },
  'initial-emotion': {
    type: 'string',
    value: 'N',
    help: 'starting emotion (default: rollout.dialogue.initialEmotion)',
  },
  think: { type: 'boolean', help: 'think-then-say mode' },
  json: { type: 'boolean', help: 'print the summary as one JSON object' },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const ROLLOUT_HELP = `attune rollout --scenario ID [options]

Runs one dialogue between the policy and the simulated user as a Temporal workflow and prints
the transcript with the user's emotion after each turn. Uses the running server and workers of
\`attune dev\` when they are up; otherwise starts an embedded dev server and workers for the
length of the command (and the local model server when an endpoint points at it).

${flagHelp(ROLLOUT_FLAGS)}`;

export async function rolloutCommand(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, ROLLOUT_FLAGS, false);
  if (values.help) {
    process.stdout.write(`${ROLLOUT_HELP}\n`);
    return 0;
  }
  if (!values.scenario) throw new UsageError('--scenario ID is required (see attune rollout --help)');
  const idProblem = nameProblem(values.scenario, 'scenario id');
  if (idProblem !== null) throw new UsageError(`--scenario "${values.scenario}": ${idProblem}`);
  const ctx = commandContext(values, 'rollout');
  const { config, log } = ctx;
  const scenario = findScenario(
    values.scenarios ? [values.scenarios] : [config.scenarios.train, config.scenarios.eval],
    values.scenario,
  );
  const maxTurns = intOption(values['max-turns'], 'max-turns');
  const initialEmotion = intOption(values['initial-emotion'], 'initial-emotion');
  const seed = intOption(values.seed, 'seed') ?? Date.now() % 1_000_000_007;
  const settings = rolloutSettingsFromConfig(config, {
    ...config.rollout.dialogue,
    ...(maxTurns !== undefined ? { maxTurns } : {}),
    ...(initialEmotion !== undefined ? { initialEmotion } : {}),
    ...(values.think ? { think: true } : {}),
  });

  return withRuntime(ctx, async (temporal) => {
    const rolloutId = `rollout-${scenario.id}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    log.info('rollout started', { workflowId: rolloutId, ui: workflowUiUrl(temporal, rolloutId) });
    const summary = await runRollout(temporal.client, config, { rolloutId, scenario, settings, seed });
    if (values.json) {
      const artifactPath = ctx.store.locate(summary.artifact);
      process.stdout.write(`${JSON.stringify({ workflowId: rolloutId, ...summary, artifactPath })}\n`);
    } else {
      const transcript = await ctx.store.getJson<Transcript>(summary.artifact);
      process.stdout.write(
        terminalSafe(`${renderTranscript(transcript)}\nTranscript: ${ctx.store.locate(summary.artifact)}\n`),
      );
    }
    return 0;
  });
}
