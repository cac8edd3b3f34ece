import { changeLiveSettings, controlTraining, trainingStatus } from '../../client/trainingControl.js';
import { connectTemporal } from '../../temporal/connect.js';
import { unpolledTrainingQueues } from '../../temporal/pollers.js';
import { trainingHandle } from '../../client/trainingRuns.js';
import { parseSetOption } from '../../config/load.js';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext } from '../context.js';
import { renderStatus, renderWaitingOn } from '../render/status.js';
import { terminalSafe } from '../../core/terminalText.js';
import { LIVE_SETTINGS_RULES } from '../../core/training/liveSet.js';

export type RunControlVerb = 'status' | 'pause' | 'resume' | 'stop' | 'set';

/** Each verb's flags: only status prints JSON. */
export const RUN_CONTROL_FLAGS = {
  status: { json: { type: 'boolean', help: 'one JSON object: the status and `waitingOn`' }, ...CONFIG_FLAGS },
  pause: CONFIG_FLAGS,
  resume: CONFIG_FLAGS,
  stop: CONFIG_FLAGS,
  set: CONFIG_FLAGS,
} as const satisfies Record<RunControlVerb, Flags>;

/** The settings a live run takes, named by the live rules themselves, wrapped for a terminal. */
export function liveSettingsHelp(width = 100): string {
  const lines = ['Changes a live run from its next step:'];
  const names = Object.keys(LIVE_SETTINGS_RULES);
  names.forEach((name, i) => {
    const word = `${name}${i < names.length - 1 ? ',' : '.'}`;
    const last = lines.length - 1;
    if (lines[last]!.length + 1 + word.length > width) lines.push(word);
    else lines[last] = `${lines[last]} ${word}`;
  });
  return lines.join('\n');
}

const HELP: Record<RunControlVerb, string> = {
  status:
    'attune status NAME [--json]\n\nStep, phase, rollouts done/failed in the step, last metrics and ETA of a training run, and\nevery task queue it needs that no worker polls (`waitingOn`).',
  pause: 'attune pause NAME\n\nIn-flight rollouts finish; no new one starts until `attune resume NAME`.',
  resume:
    'attune resume NAME\n\nResumes a paused run; a run waiting for an operator after too many failed rollouts retries them.\nDialogues waiting at a failed LLM call (attune rollouts list NAME --waiting) retry that call\nand go on: same rollout, same seed, no finished call made again.',
  stop: 'attune stop NAME\n\nGraceful stop: the current step finishes (optimizer step, publishing, metrics), then the run ends.',
  set: `attune set NAME key=value [key=value...]\n\n${liveSettingsHelp()}\nBad values are rejected with the reason.`,
};

export function runControlCommand(verb: RunControlVerb) {
  return async (argv: string[]): Promise<number> => {
    const { values, positionals } = parseCommand(argv, RUN_CONTROL_FLAGS[verb]);
    if (values.help) {
      process.stdout.write(`${HELP[verb]}\n\n${flagHelp(RUN_CONTROL_FLAGS[verb])}\n`);
      return 0;
    }
    const [name, ...pairs] = positionals;
    if (!name) throw new UsageError(`${verb} needs the run NAME`);
    const ctx = commandContext(values, verb);
    const temporal = await connectTemporal(ctx.config, ctx.log, { startIfMissing: false });
    try {
      const client = temporal.client;
      if (verb === 'status') {
        const json = 'json' in values && values.json === true;
        // An unknown run fails here, naming its workflow id, before any queue is looked at.
        await trainingHandle(client, name).describe();
        const waitingOn = await unpolledTrainingQueues(temporal, ctx.config);
        if (waitingOn.some((q) => q.kind === 'workflow')) {
          // No workflow worker: the run can neither move nor answer the status query.
          const error = `no worker polls ${waitingOn.map((q) => q.queue).join(', ')}: run ${name} cannot make progress or report its status`;
          process.stdout.write(
            json
              ? `${JSON.stringify({ runName: name, phase: null, waitingOn, error })}\n`
              : `${terminalSafe(renderWaitingOn(error, waitingOn))}\n`,
          );
          return 1;
        }
        const status = await trainingStatus(client, name);
        const ended = status.phase === 'done' || status.phase === 'stopped';
        const view = { ...status, waitingOn: ended ? [] : waitingOn };
        process.stdout.write(json ? `${JSON.stringify(view)}\n` : `${terminalSafe(renderStatus(view))}\n`);
        return 0;
      }
      if (verb === 'set') {
        if (pairs.length === 0) throw new UsageError('set needs key=value pairs');
        const change = Object.fromEntries(pairs.map((p) => parseSetOption(p)));
        const outcome = await changeLiveSettings(client, name, change);
        if ('rejected' in outcome) {
          process.stderr.write(`attune set: rejected: ${terminalSafe(outcome.rejected)}\n`);
          return 1;
        }
        process.stdout.write(`${name}: ${JSON.stringify(outcome.applied)} from the next step\n`);
        return 0;
      }
      const status = await controlTraining(client, name, verb);
      process.stdout.write(
        `${name}: ${verb === 'pause' ? 'paused' : verb === 'resume' ? 'resumed' : 'will stop after the current step'} (step ${status.step}, ${status.phase})\n`,
      );
      return 0;
    } finally {
      await temporal.close();
    }
  };
}
