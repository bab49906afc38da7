import { LogFormatter, LogItem, LogLevelThreshold, Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import type { Context } from 'aws-lambda';

/** Structured JSON logger: one line per entry, with fixed fields (e.g. `jobId`) on every line. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Record<string, unknown>): Logger;
}

/** The logger a Lambda entry point holds: it also takes each invocation's context. */
export interface RootLogger extends Logger {
  /** Adds the invocation's request id, function name and cold start to every later line. */
  addContext(context: Context): void;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** Where a line goes: one JSON text per entry. */
export type LogSink = (line: string, level: Exclude<LogLevel, 'silent'>) => void;

const POWERTOOLS_LEVELS = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', silent: 'SILENT' } as const;

/**
 * Orrery's line shape, kept from before Powertools: `level` (lower case), `time`, `message`,
 * then the Lambda context Powertools knows (request id, cold start, X-Ray trace), then the
 * logger's and the call's fields.
 */
class LineFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    const context = attributes.lambdaContext;
    const base: LogAttributes = {
      level: String(attributes.logLevel).toLowerCase(),
      time: this.formatTimestamp(attributes.timestamp),
      message: attributes.message,
    };
    if (context) {
      base.requestId = context.awsRequestId;
      base.coldStart = context.coldStart;
    }
    if (attributes.xRayTraceId) base.traceId = attributes.xRayTraceId;
    return new LogItem({ attributes: base }).addAttributes(additional);
  }
}

const SINK_LEVELS: Readonly<Record<number, Exclude<LogLevel, 'silent'>>> = {
  [LogLevelThreshold.TRACE]: 'debug',
  [LogLevelThreshold.DEBUG]: 'debug',
  [LogLevelThreshold.INFO]: 'info',
  [LogLevelThreshold.WARN]: 'warn',
  [LogLevelThreshold.ERROR]: 'error',
  [LogLevelThreshold.CRITICAL]: 'error',
};

/** Powertools' logger, writing each line to `sink` when one is given (tests), else to stdout/stderr as Powertools does. */
class SinkLogger extends PowertoolsLogger {
  private sink?: LogSink;

  static create(level: LogLevel, sink: LogSink | undefined): SinkLogger {
    const logger = new SinkLogger({ logLevel: POWERTOOLS_LEVELS[level], logFormatter: new LineFormatter() });
    logger.sink = sink;
    return logger;
  }

  protected override printLog(logLevel: number, log: LogItem): void {
    // (lines Powertools logs while it is being constructed go to stdout: the sink is set after)
    if (!this.sink) {
      super.printLog(logLevel, log);
      return;
    }
    log.prepareForPrint();
    this.sink(JSON.stringify(log.getAttributes(), this.getJsonReplacer()), SINK_LEVELS[logLevel] ?? 'info');
  }
}

/**
 * A {@link Logger} over Powertools for AWS Lambda's Logger. One Powertools logger per root;
 * a child only adds fields, passed with every call, so the concurrent records of a batch never
 * share mutable keys. `sink` receives each line instead of stdout (tests and the chaos run read
 * lines this way).
 *
 * @example
 * const log = createLogger({ level: 'info' }).child({ jobId: 'abc' });
 * log.info('started', { attempt: 1 });
 */
export function createLogger(
  options: { level?: LogLevel; sink?: LogSink; fields?: Record<string, unknown> } = {},
): RootLogger {
  const powertools = SinkLogger.create(options.level ?? 'info', options.sink);
  const make = (base: Record<string, unknown>): Logger => {
    const write = (at: Exclude<LogLevel, 'silent'>, message: string, fields?: Record<string, unknown>) => {
      powertools[at](message, { ...base, ...fields });
    };
    return {
      debug: (m, f) => write('debug', m, f),
      info: (m, f) => write('info', m, f),
      warn: (m, f) => write('warn', m, f),
      error: (m, f) => write('error', m, f),
      child: (fields) => make({ ...base, ...fields }),
    };
  };
  return { ...make(options.fields ?? {}), addContext: (context) => powertools.addContext(context) };
}

/** Error fields safe to log. */
export function errorFields(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { errorName: error.name, errorMessage: error.message, stack: error.stack };
  return { errorMessage: String(error) };
}
