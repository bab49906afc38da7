/** Structured JSON logger: one line per entry, with fixed fields (e.g. `jobId`) on every line. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Record<string, unknown>): Logger;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export type LogSink = (line: string, level: Exclude<LogLevel, 'silent'>) => void;

const defaultSink: LogSink = (line, level) => {
  if (level === 'error' || level === 'warn') console.error(line);
  else console.log(line);
};

/**
 * @example
 * const log = createLogger({ level: 'info' }).child({ jobId: 'abc' });
 * log.info('started', { attempt: 1 });
 */
export function createLogger(
  options: { level?: LogLevel; sink?: LogSink; fields?: Record<string, unknown> } = {},
): Logger {
  const level = options.level ?? 'info';
  const sink = options.sink ?? defaultSink;
  const base = options.fields ?? {};
  const write = (at: Exclude<LogLevel, 'silent'>, message: string, fields?: Record<string, unknown>) => {
    if (ORDER[at] < ORDER[level]) return;
    sink(JSON.stringify({ level: at, time: new Date().toISOString(), message, ...base, ...fields }), at);
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => createLogger({ level, sink, fields: { ...base, ...fields } }),
  };
}

/** Error fields safe to log. */
export function errorFields(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { errorName: error.name, errorMessage: error.message, stack: error.stack };
  return { errorMessage: String(error) };
}
