import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { capabilitySuiteRun } from '../../config/capabilitySuiteRun.js';
import type { AttuneConfig } from '../../config/schema.js';
import type { CapabilitySuite } from '../../core/capability/capabilitySuites.js';
import { taskQueuesFor } from '../../config/taskQueues.js';
import { isValidName, NAME_RULE } from '../../core/names.js';
import { buildEvaluationInput } from '../../client/evaluations.js';
import { connectTemporal } from '../../temporal/connect.js';
import { scheduledEvaluation, type ScheduledEvaluationInput } from '../../workflows/scheduledEvaluation.js';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext } from '../context.js';
import { EVAL_FLAGS } from './eval.js';
import { suiteOf } from './evalSuite.js';

/** One table for every schedule subcommand; the help says which uses what. */
export const SCHEDULE_FLAGS = {
  cron: { type: 'string', value: 'EXPR', help: 'create: when it fires, "MIN HOUR DOM MON DOW" (required)' },
  // What an evaluation runs on means the same as for `attune eval`.
  scenarios: EVAL_FLAGS.scenarios,
  split: EVAL_FLAGS.split,
  run: {
    type: 'string',
    value: 'RUN',
    help: "create: evaluates that run's latest published version at each firing",
  },
  policy: { type: 'string', value: 'VERSION', help: 'create: evaluate this version (RUN@STEP) at each firing' },
  suites: {
    type: 'string',
    value: 'math,code',
    help: 'create: also score these capability suites (attune eval --suite) on the same version at each firing',
  },
  'catchup-window': {
    type: 'string',
    value: 'TIME',
    help: 'create: how late a missed firing is still caught up (default 1 hour)',
  },
  note: { type: 'string', value: 'TEXT', help: "create, pause, unpause: the schedule's note" },
  json: { type: 'boolean', help: 'list: a JSON array' },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const SCHEDULE_HELP = `attune schedule <command>

Nightly (or any cron) evaluations as Temporal Schedules: overlapping firings are skipped, missed
firings are caught up within --catchup-window. Workers must be running (attune dev / attune worker).

  create NAME --cron "0 2 * * *" [--scenarios DIR | --split eval] [--run RUN | --policy VERSION]
              [--suites math,code] [--catchup-window 1h] [--note TEXT]
  list [--json]
  pause NAME [--note TEXT]     unpause NAME     delete NAME     trigger NAME (run now)

${flagHelp(SCHEDULE_FLAGS)}`;

export interface CreateScheduleOptions {
  name: string;
  cron: string;
  scenarios?: string;
  split?: 'eval' | 'train';
  run?: string;
  policy?: string;
  /** Capability suites each firing also scores on the same version. */
  suites?: CapabilitySuite[];
  catchupWindow?: string;
  note?: string;
}

export async function createEvaluationSchedule(
  client: Client,
  config: AttuneConfig,
  options: CreateScheduleOptions,
): Promise<string> {
  if (!isValidName(options.name)) throw new UsageError(`schedule name "${options.name}": ${NAME_RULE}`);
  if (options.run && options.policy) throw new UsageError('give --run or --policy, not both');
  const evaluation = buildEvaluationInput(config, {
    ...(options.scenarios ? { scenarios: options.scenarios } : {}),
    ...(options.split ? { split: options.split } : {}),
    // A run's versions are served where trainer.policyBaseURL (or the trainer) serves them.
    ...(options.policy ? { policy: options.policy } : options.run ? { policy: `${options.run}@0` } : {}),
    evalId: `${options.name}-template`,
  });
  const input: ScheduledEvaluationInput = {
    schedule: options.name,
    evaluation,
    run: options.run
      ? { name: options.run, trainer: { url: config.trainer.url, tokenEnv: config.trainer.tokenEnv } }
      : null,
    ...(options.suites && options.suites.length > 0
      ? { suites: options.suites.map((suite) => capabilitySuiteRun(suite)) }
      : {}),
  };
  const handle = await client.schedule.create({
    scheduleId: options.name,
    spec: { cronExpressions: [options.cron] },
    action: {
      type: 'startWorkflow',
      workflowType: scheduledEvaluation,
      workflowId: options.name,
      taskQueue: taskQueuesFor(config.temporal.taskQueuePrefix).rollouts,
      args: [input],
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: options.catchupWindow ?? '1 hour' },
    state: {
      note:
        options.note ??
        `Sentient evaluation${input.suites ? ` and ${input.suites.map((r) => r.suite).join(', ')}` : ''} of ${options.run ? `run ${options.run} (latest version)` : evaluation.settings.policy.model}`,
    },
  });
  return handle.scheduleId;
}

/** `--suites math,code`: each a known suite, once. */
function suitesOf(text: string): CapabilitySuite[] {
  const suites = text.split(',').map((s) => suiteOf(s.trim()));
  if (new Set(suites).size !== suites.length) throw new UsageError(`--suites "${text}": a suite is listed twice`);
  return suites;
}

/** `attune schedule list`: every schedule, as a table or as JSON. */
async function listSchedules(client: Client, json: boolean): Promise<void> {
  const rows: { id: string; paused: boolean; note: string; next: string | null }[] = [];
  for await (const s of client.schedule.list()) {
    rows.push({
      id: s.scheduleId,
      paused: s.state.paused,
      note: s.state.note ?? '',
      next: s.info.nextActionTimes[0]?.toISOString() ?? null,
    });
  }
  if (json) process.stdout.write(`${JSON.stringify(rows)}\n`);
  else {
    process.stdout.write(`${'SCHEDULE'.padEnd(28)} ${'PAUSED'.padEnd(6)} ${'NEXT RUN'.padEnd(24)} NOTE\n`);
    for (const r of rows)
      process.stdout.write(
        `${r.id.padEnd(28)} ${(r.paused ? 'yes' : 'no').padEnd(6)} ${(r.next ?? '-').padEnd(24)} ${r.note}\n`,
      );
  }
}

export async function scheduleCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    process.stdout.write(`${SCHEDULE_HELP}\n`);
    return sub === undefined ? 1 : 0;
  }
  const { values, positionals } = parseCommand(rest, SCHEDULE_FLAGS);
  if (values.help) {
    process.stdout.write(`${SCHEDULE_HELP}\n`);
    return 0;
  }
  const ctx = commandContext(values, 'schedule');
  const temporal = await connectTemporal(ctx.config, ctx.log, { startIfMissing: false });
  const client = temporal.client;
  try {
    const name = positionals[0];
    const needName = () => {
      if (!name) throw new UsageError(`schedule ${sub} needs a NAME`);
      return name;
    };
    switch (sub) {
      case 'create': {
        if (!values.cron) throw new UsageError('--cron "MIN HOUR DOM MON DOW" is required');
        if (values.split && values.split !== 'eval' && values.split !== 'train')
          throw new UsageError('--split must be eval or train');
        const id = await createEvaluationSchedule(client, ctx.config, {
          name: needName(),
          cron: values.cron,
          ...(values.scenarios ? { scenarios: values.scenarios } : {}),
          ...(values.split ? { split: values.split as 'eval' | 'train' } : {}),
          ...(values.run ? { run: values.run } : {}),
          ...(values.policy ? { policy: values.policy } : {}),
          ...(values.suites ? { suites: suitesOf(values.suites) } : {}),
          ...(values['catchup-window'] ? { catchupWindow: values['catchup-window'] } : {}),
          ...(values.note ? { note: values.note } : {}),
        });
        process.stdout.write(`created schedule ${id} (${values.cron})\n`);
        return 0;
      }
      case 'list':
        await listSchedules(client, Boolean(values.json));
        return 0;
      case 'pause':
        await client.schedule.getHandle(needName()).pause(values.note ?? 'paused with attune schedule pause');
        process.stdout.write(`paused ${name}\n`);
        return 0;
      case 'unpause':
        await client.schedule.getHandle(needName()).unpause(values.note ?? 'unpaused with attune schedule unpause');
        process.stdout.write(`unpaused ${name}\n`);
        return 0;
      case 'delete':
        await client.schedule.getHandle(needName()).delete();
        process.stdout.write(`deleted ${name}\n`);
        return 0;
      case 'trigger':
        await client.schedule.getHandle(needName()).trigger(ScheduleOverlapPolicy.ALLOW_ALL);
        process.stdout.write(`triggered ${name}\n`);
        return 0;
      default:
        throw new UsageError(`unknown schedule command "${sub}"\n\n${SCHEDULE_HELP}`);
    }
  } finally {
    await temporal.close();
  }
}
