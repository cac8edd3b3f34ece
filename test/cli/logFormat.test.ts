import assert from 'node:assert/strict';
import { cleanFields, formatHuman, formatJson, resolveLogFormat, taskTokenFingerprint } from '../../src/logFormat.js';
import { createLogger } from '../../src/log.js';
import { effectiveLevel } from '../../src/temporal/runtimeLogging.js';
import { takeGlobalOptions } from '../../src/cli/main.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { FIXTURE_SCENARIOS, testConfigSet } from '../support/rolloutRig.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { attune } from './attuneProcess.js';

const TOKEN =
  'CiQ1ZTkyYjQ0Ny1hYmNkLTQ5ZjAtYjk0ZC0xMjM0NTY3ODlhYmMSBnJvbGxvdXQaJDAxMjM0NTY3LTg5YWItY2RlZi0wMTIzLTQ1Njc4OWFiY2RlZg==';
const at = new Date('2025-03-04T05:06:07.890Z');

describe('log format', () => {
  it('defaults to human on a terminal and JSON otherwise; ATTUNE_LOG_FORMAT wins', () => {
    assert.equal(resolveLogFormat({}, true), 'human');
    assert.equal(resolveLogFormat({}, false), 'json');
    assert.equal(resolveLogFormat({ ATTUNE_LOG_FORMAT: 'json' }, true), 'json');
    assert.equal(resolveLogFormat({ ATTUNE_LOG_FORMAT: 'human' }, false), 'human');
    assert.equal(resolveLogFormat({ ATTUNE_LOG_FORMAT: 'yaml' }, false), 'json');
  });

  it('human: one line with time, level, component, message, the cause and the key fields, no task token', () => {
    const error = new Error('activity failed', { cause: new Error('policy endpoint http://x/v1: HTTP 500: boom') });
    const line = formatHuman({
      time: at,
      level: 'warn',
      msg: 'Activity failed',
      fields: {
        source: 'temporal',
        sdkComponent: 'worker',
        taskToken: TOKEN,
        namespace: 'default',
        activityType: 'generatePolicyTurn',
        taskQueue: 'attune-llm-policy',
        attempt: 2,
        error,
      },
    });
    assert.equal(
      line,
      '05:06:07 WARN  temporal: Activity failed: activity failed: caused by: policy endpoint http://x/v1: HTTP 500: boom  activityType=generatePolicyTurn taskQueue=attune-llm-policy attempt=2',
    );
    assert.ok(!line.includes('\n'));
    assert.equal(
      formatHuman({ time: at, level: 'info', msg: 'training started', fields: { component: 'train', run: 'my run' } }),
      '05:06:07 INFO  train: training started  run="my run"',
    );
  });

  it('json: task tokens become a fingerprint at any depth, errors become their text', () => {
    const fields = cleanFields({ taskToken: TOKEN, nested: { base64TaskToken: TOKEN }, error: new Error('x') });
    assert.equal(fields.taskToken, taskTokenFingerprint(TOKEN));
    assert.match(String(fields.taskToken), /^sha256:[0-9a-f]{12}$/);
    assert.deepEqual(fields.nested, { base64TaskToken: taskTokenFingerprint(TOKEN) });
    assert.equal(fields.error, 'x');
    const line = formatJson({ time: at, level: 'warn', msg: 'm', fields: { taskToken: TOKEN } });
    assert.ok(!line.includes(TOKEN));
    assert.deepEqual(JSON.parse(line), {
      time: at.toISOString(),
      level: 'warn',
      msg: 'm',
      taskToken: taskTokenFingerprint(TOKEN),
    });
  });

  it('createLogger writes the chosen format', () => {
    const lines: string[] = [];
    createLogger({ component: 'c' }, 'info', (l) => lines.push(l), 'human').info('hello', { n: 1 });
    createLogger({ component: 'c' }, 'info', (l) => lines.push(l), 'json').info('hello', { n: 1 });
    assert.match(lines[0]!, /^\d\d:\d\d:\d\d INFO {2}c: hello {2}n=1\n$/);
    assert.deepEqual(
      { ...(JSON.parse(lines[1]!) as object), time: 't' },
      {
        time: 't',
        level: 'info',
        msg: 'hello',
        component: 'c',
        n: 1,
      },
    );
  });

  it("demotes the SDK's expected no-workflows warning to debug, and nothing else", () => {
    assert.equal(
      effectiveLevel({ level: 'WARN', message: 'No workflows registered, not polling for workflow tasks' }),
      'DEBUG',
    );
    assert.equal(effectiveLevel({ level: 'WARN', message: 'Activity failed' }), 'WARN');
  });

  it('--log-format is a global option, before or after the command, and checked', () => {
    assert.deepEqual(takeGlobalOptions(['--log-format', 'json', 'status', 'x']), {
      argv: ['status', 'x'],
      logFormat: 'json',
    });
    assert.deepEqual(takeGlobalOptions(['status', '--log-format=human', 'x']), {
      argv: ['status', 'x'],
      logFormat: 'human',
    });
    assert.deepEqual(takeGlobalOptions(['set', '--', '--log-format']), { argv: ['set', '--', '--log-format'] });
    assert.throws(
      () => takeGlobalOptions(['--log-format', 'xml']),
      /--log-format must be one of human, json, got "xml"/,
    );
  });
});

describe('log format of the attune command', function () {
  this.timeout(180_000);
  let fake: FakeOpenAIServer;
  let address: string;
  before(async () => {
    address = (await sharedTestEnv()).address;
    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 4 }) });
  });
  after(async () => {
    await fake.close();
  });

  /** One dialogue whose first policy call fails once, so the SDK logs an activity failure with its task token. */
  async function rolloutLogs(flags: string[]) {
    fake.inject('policy', fake.calls.filter((c) => c.role === 'policy').length + 1, '500');
    const result = await attune(
      [
        ...flags,
        'rollout',
        '--scenario',
        'test-venting-negative-baker',
        '--scenarios',
        FIXTURE_SCENARIOS,
        '--max-turns',
        '1',
        '--json',
        ...testConfigSet(fake.url).flatMap((s) => ['--set', s]),
      ],
      { TEMPORAL_ADDRESS: address, ATTUNE_LOG_FORMAT: '' },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stderr, /No workflows registered/);
    assert.ok(!/taskToken[^\n]*[A-Za-z0-9+/]{40,}/.test(result.stderr), `a raw task token in:\n${result.stderr}`);
    return result.stderr.split('\n').filter((l) => l !== '');
  }

  it('logs JSON lines when stderr is not a terminal, and with --log-format json', async () => {
    for (const flags of [[], ['--log-format', 'json']]) {
      const lines = await rolloutLogs(flags);
      const records = lines.map((l) => JSON.parse(l) as { level: string; msg: string; taskToken?: string });
      assert.ok(records.some((r) => r.msg === 'no workers polling: starting them in this process'));
      const failed = records.find((r) => r.msg === 'Activity failed');
      assert.ok(failed, lines.join('\n'));
      assert.match(failed.taskToken ?? '', /^sha256:[0-9a-f]{12}$/);
    }
  });

  it('logs one human line per event with --log-format human', async () => {
    const lines = await rolloutLogs(['--log-format', 'human']);
    for (const line of lines) assert.match(line, /^\d\d:\d\d:\d\d (DEBUG|INFO |WARN |ERROR) /, line);
    assert.ok(lines.some((l) => /INFO {2}rollout: no workers polling: starting them in this process/.test(l)));
    const failed = lines.find((l) => l.includes('Activity failed'));
    assert.ok(failed, lines.join('\n'));
    assert.match(failed, /^.{8} WARN {2}temporal: Activity failed: .*HTTP 500/);
    assert.doesNotMatch(failed, /taskToken/);
  });
});
