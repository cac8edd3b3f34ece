import { listWaitingRollouts } from '../../client/waitingRollouts.js';
import { terminalSafe } from '../../core/terminalText.js';
import { connectTemporal } from '../../temporal/connect.js';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext } from '../context.js';
import { workflowUiUrl } from '../runtime.js';

export const ROLLOUTS_FLAGS = {
  waiting: { type: 'boolean', help: 'only the waiting dialogues (required: the one listing there is)' },
  json: { type: 'boolean', help: 'a JSON array' },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const ROLLOUTS_HELP = `attune rollouts list NAME --waiting [--json]

The dialogues of run NAME (its training steps and evaluations) that wait for an operator at an
LLM call whose endpoint stayed down past its retries: rollout id, step, scenario and the link to
the rollout in the Temporal UI, where its details name the call, the endpoint and the last error.
Fix the endpoint, then \`attune resume NAME\` continues them all, or send one the signal \`continue\`.

${flagHelp(ROLLOUTS_FLAGS)}`;

export async function rolloutsCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, ROLLOUTS_FLAGS);
  const [verb, name, ...extra] = positionals;
  if (values.help || verb === undefined) {
    process.stdout.write(`${ROLLOUTS_HELP}\n`);
    return values.help ? 0 : 2;
  }
  if (verb !== 'list') throw new UsageError(`unknown subcommand "${verb}": expected list`);
  if (!name || extra.length > 0) throw new UsageError('rollouts list needs one run NAME');
  if (!values.waiting) throw new UsageError('rollouts list lists the waiting dialogues: add --waiting');
  const ctx = commandContext(values, 'rollouts');
  const temporal = await connectTemporal(ctx.config, ctx.log, { startIfMissing: false });
  try {
    const rows = (await listWaitingRollouts(temporal.client, name)).map((r) => ({
      ...r,
      uiUrl: workflowUiUrl(temporal, r.rolloutId),
    }));
    if (values.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
    else if (rows.length === 0) process.stdout.write(`no dialogue of ${terminalSafe(name)} waits\n`);
    else
      for (const r of rows)
        process.stdout.write(
          `${terminalSafe(r.rolloutId)}  step ${r.step ?? '-'}  ${terminalSafe(r.scenarioId ?? '-')}  ${r.uiUrl ?? '(no UI)'}\n`,
        );
    return 0;
  } finally {
    await temporal.close();
  }
}
