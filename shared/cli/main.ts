/**
 * `orrery`, the command-line client of the Orrery API. `bin/orrery.mjs` runs the bundle that
 * `npm run build:cli` writes (or this file through tsx when there is none) and calls
 * {@link main}.
 *
 * @example
 * orrery enqueue flaky --payload '{"failTimes":2}'
 * orrery watch <id>
 * orrery list --type flaky --state failed --json
 */
import {
  createClient,
  JobWaitError,
  OrreryApiError,
  type OrreryClient,
  OrreryNetworkError,
  UploadFailed,
  UploadUrlExpired,
} from '../client';
import { type CommandDef, commandHelp, overviewHelp, parseCommandLine, UsageError } from './args';
import { dashboard } from './commands/dashboard';
import { dev } from './commands/dev';
import { dlqCommands } from './commands/dlq';
import { eventCommands } from './commands/events';
import { flowCommands } from './commands/flows';
import { jobCommands } from './commands/jobs';
import { keyCommands } from './commands/keys';
import { replayCommands } from './commands/replay';
import { scheduleCommands } from './commands/schedules';
import { watch } from './commands/watch';
import { CliConfigError, resolveApiUrl } from './config';
import { type CommandContext, EXIT, println } from './context';
import { createStyle, formatApiError, type Output, wantsColor } from './format';

export const VERSION = '0.1.0';

export const COMMANDS: readonly CommandDef<CommandContext>[] = [
  ...jobCommands,
  watch,
  ...dlqCommands,
  ...scheduleCommands,
  ...keyCommands,
  ...flowCommands,
  ...eventCommands,
  ...replayCommands,
  dashboard,
  dev,
];

/** The process around the CLI; tests pass their own. */
export interface CliIo {
  stdout: Output;
  stderr: Output;
  env: Record<string, string | undefined>;
  cwd: string;
  readStdin(): Promise<string>;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** How the launcher ran the CLI (`bundle` or `source`), for `--version`. */
  runtime?: string;
  /** When a long-running command (`dashboard`) stops. @default the first SIGINT or SIGTERM */
  untilStopped?: () => Promise<unknown>;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

export function processIo(runtime?: string): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    readStdin: () => readAll(process.stdin),
    ...(runtime ? { runtime } : {}),
  };
}

/**
 * The launcher's entry: runs `argv` against the real process and sets `process.exitCode`.
 * A closed stdout (`orrery list | head -1`) ends the process quietly.
 */
export async function runCli(argv: string[], runtime?: string): Promise<void> {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
  process.exitCode = await main(argv, processIo(runtime));
}

/** Runs one command line; resolves to the exit code. Never calls `process.exit`. */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  const errStyle = createStyle(wantsColor(io.stderr, io.env, argv.includes('--no-color')));
  const json = argv.includes('--json');
  try {
    const parsed = parseCommandLine(argv, COMMANDS);
    if (parsed.kind === 'version') {
      println(io.stdout, `orrery ${VERSION}${io.runtime ? ` (${io.runtime})` : ''}`);
      return EXIT.ok;
    }
    if (parsed.kind === 'help') {
      io.stdout.write(parsed.command ? commandHelp(parsed.command) : overviewHelp(COMMANDS, parsed.group));
      return EXIT.ok;
    }
    const { command, args, options } = parsed;
    let client: OrreryClient | undefined;
    const context: CommandContext = {
      client() {
        if (!client) {
          const { url } = resolveApiUrl({
            flag: typeof options.url === 'string' ? options.url : undefined,
            env: io.env,
            cwd: io.cwd,
          });
          try {
            client = createClient({
              url,
              ...(typeof options.region === 'string' ? { region: options.region } : {}),
              ...(options['no-sign'] ? { sign: false } : options.sign ? { sign: true } : {}),
              ...(io.fetch ? { fetch: io.fetch } : {}),
            });
          } catch (error) {
            throw new CliConfigError(`bad API URL ${JSON.stringify(url)}: ${(error as Error).message}`);
          }
        }
        return client;
      },
      stdout: io.stdout,
      stderr: io.stderr,
      style: createStyle(wantsColor(io.stdout, io.env, options['no-color'] === true)),
      json: options.json === true,
      env: io.env,
      cwd: io.cwd,
      readStdin: io.readStdin,
      now: io.now ?? Date.now,
      sleep: io.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
      ...(io.untilStopped ? { untilStopped: io.untilStopped } : {}),
    };
    return await command.run(context, args, options);
  } catch (error) {
    return report(error, io, errStyle, json);
  }
}

function report(error: unknown, io: CliIo, style: ReturnType<typeof createStyle>, json: boolean): number {
  const write = (text: string) => println(io.stderr, text);
  if (error instanceof UsageError) {
    write(`orrery: ${error.message}`);
    write(`Run 'orrery ${error.command ? `${error.command} ` : ''}--help' for usage.`);
    return EXIT.usage;
  }
  if (error instanceof CliConfigError) {
    write(`orrery: ${error.message}`);
    return EXIT.usage;
  }
  if (error instanceof OrreryApiError) {
    write(json ? JSON.stringify(error.toJSON()) : formatApiError(error, style));
    if (!json && (error.code === 'route_not_found' || error.code === 'method_not_allowed')) {
      write(
        style.dim(`  the API does not serve ${error.method} ${error.path.split('?')[0]}; is it an older deployment?`),
      );
    }
    return EXIT.apiError;
  }
  if (error instanceof OrreryNetworkError) {
    const local = /\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(error.url);
    const body = { error: { code: error.timedOut ? 'timeout' : 'network_error', message: error.message } };
    write(json ? JSON.stringify(body) : `${style.red('error')}: ${style.bold(body.error.code)}: ${error.message}`);
    if (local && !json) write(style.dim('  is the local server running? Start it with `npm run dev`.'));
    return EXIT.apiError;
  }
  if (error instanceof UploadFailed) {
    // S3 refused the PUT of an upload (or the URL had expired): nothing was enqueued
    const code = error instanceof UploadUrlExpired ? 'upload_url_expired' : 'upload_failed';
    const body = {
      error: { code, message: error.message, ref: error.ref, status: error.status, s3Code: error.s3Code ?? null },
    };
    write(json ? JSON.stringify(body) : `${style.red('error')}: ${style.bold(code)}: ${error.message}`);
    return EXIT.apiError;
  }
  if (error instanceof JobWaitError) {
    write(`${style.red('error')}: ${error.message}`);
    return error.reason === 'timeout' ? EXIT.timeout : EXIT.jobFailed;
  }
  const message =
    error instanceof Error ? (io.env.ORRERY_DEBUG ? (error.stack ?? error.message) : error.message) : String(error);
  write(`${style.red('error')}: ${message}`);
  return EXIT.apiError;
}
