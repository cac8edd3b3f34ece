import { createHash } from 'node:crypto';

/**
 * How log lines read: `human` (one short line per event) or `json` (one object per line, for log
 * collectors). `--log-format` or `ATTUNE_LOG_FORMAT` choose; otherwise human when stderr is a
 * terminal and JSON when it is not (a file, a pipe, a container log), the usual CLI convention.
 */
export const LOG_FORMATS = ['human', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export function isLogFormat(value: unknown): value is LogFormat {
  return value === 'human' || value === 'json';
}

export function resolveLogFormat(
  env: NodeJS.ProcessEnv = process.env,
  isTTY = process.stderr.isTTY === true,
): LogFormat {
  const chosen = env.ATTUNE_LOG_FORMAT;
  if (isLogFormat(chosen)) return chosen;
  return isTTY ? 'human' : 'json';
}

/** Keys whose values are task tokens: opaque blobs that let anyone holding them complete the task. */
const TASK_TOKEN_KEYS = new Set(['taskToken', 'base64TaskToken']);

/** A task token becomes a short fingerprint: enough to tell two apart, useless to complete a task with. */
export function taskTokenFingerprint(token: unknown): string {
  const text =
    typeof token === 'string'
      ? token
      : token instanceof Uint8Array
        ? Buffer.from(token).toString('base64')
        : String(token);
  return `sha256:${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
}

/** An error and its causes on one line: the SDK's "Activity failed" says little without them. */
export function errorText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 6; depth++) {
    parts.push(
      current instanceof Error ? current.message : typeof current === 'string' ? current : JSON.stringify(current),
    );
    current = current instanceof Error ? (current as Error & { cause?: unknown }).cause : undefined;
  }
  return parts.filter((p, i) => p && parts.indexOf(p) === i).join(': caused by: ');
}

/** Fields safe to print in either format: task tokens fingerprinted (at any depth), errors as text. */
export function cleanFields(fields: Record<string, unknown>, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (TASK_TOKEN_KEYS.has(key)) out[key] = taskTokenFingerprint(value);
    else if (value instanceof Error) out[key] = errorText(value);
    else if (depth < 3 && value !== null && typeof value === 'object' && !Array.isArray(value))
      out[key] = cleanFields(value as Record<string, unknown>, depth + 1);
    else out[key] = value;
  }
  return out;
}

export interface LogRecord {
  time: Date;
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

/** Fields a person reading the terminal does not need on every line (JSON keeps them all). */
const HUMAN_HIDDEN = new Set([
  'taskToken',
  'base64TaskToken',
  'sdkComponent',
  'namespace',
  'runId',
  'workflowRunId',
  'activityId',
  'isLocal',
  'source',
]);

function humanValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const short = text.length > 300 ? `${text.slice(0, 297)}...` : text;
  return /[\s"=]/.test(short) || short === '' ? JSON.stringify(short) : short;
}

function clock(time: Date): string {
  return time.toISOString().slice(11, 19);
}

/** One line per event: time, level, component, message, then the key fields; the error last, as the cause. */
export function formatHuman(record: LogRecord): string {
  const fields = cleanFields(record.fields);
  const component =
    typeof fields.component === 'string' ? fields.component : fields.source === 'temporal' ? 'temporal' : null;
  const rest = Object.entries(fields).filter(([k]) => !HUMAN_HIDDEN.has(k) && k !== 'component' && k !== 'error');
  const cause =
    fields.error === undefined
      ? ''
      : `: ${typeof fields.error === 'string' ? fields.error : JSON.stringify(fields.error)}`;
  const pairs = rest.map(([k, v]) => `${k}=${humanValue(v)}`).join(' ');
  return `${clock(record.time)} ${record.level.toUpperCase().padEnd(5)} ${component ? `${component}: ` : ''}${record.msg.replace(/\s+/g, ' ')}${cause}${pairs ? `  ${pairs}` : ''}`;
}

export function formatJson(record: LogRecord): string {
  return JSON.stringify({
    time: record.time.toISOString(),
    level: record.level,
    msg: record.msg,
    ...cleanFields(record.fields),
  });
}

export function formatLogRecord(format: LogFormat, record: LogRecord): string {
  return format === 'human' ? formatHuman(record) : formatJson(record);
}
