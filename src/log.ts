import { formatLogRecord, resolveLogFormat, type LogFormat } from './logFormat.js';

/**
 * Logs on stderr, so stdout stays for command output: one line per event, human-readable or JSON
 * (`--log-format`, `ATTUNE_LOG_FORMAT`; see logFormat.ts for the default).
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

function envLevel(): LogLevel {
  const value = process.env.ATTUNE_LOG_LEVEL;
  return value === 'debug' || value === 'info' || value === 'warn' || value === 'error' ? value : 'info';
}

/** `format` absent: chosen at each line, so a logger made at import time follows the CLI's `--log-format`. */
export function createLogger(
  base: Record<string, unknown> = {},
  level: LogLevel = envLevel(),
  write: (line: string) => void = (l) => process.stderr.write(l),
  format?: LogFormat,
): Logger {
  const emit = (lvl: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < ORDER[level]) return;
    const record = { time: new Date(), level: lvl, msg: message, fields: { ...base, ...fields } };
    write(`${formatLogRecord(format ?? resolveLogFormat(), record)}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ ...base, ...fields }, level, write, format),
  };
}
