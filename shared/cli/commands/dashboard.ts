import type { CommandDef } from '../args';
import { CliConfigError, resolveApiUrl } from '../config';
import { type CommandContext, EXIT, println, untilSignal } from '../context';
import { intOption } from '../input';

type Command = CommandDef<CommandContext>;

export const dashboard: Command = {
  path: ['dashboard'],
  args: [],
  summary: 'serve the web dashboard on 127.0.0.1, forwarding its API calls signed with your AWS credentials',
  description: [
    "Nothing is exposed: the dashboard listens on loopback only, and forwards the browser's API calls to",
    'the API (--url, $ORRERY_URL or .orrery/outputs.json), signed with SigV4 and the AWS SDK default',
    'credential chain (AWS_PROFILE, SSO, environment...), as the other commands are. Ctrl-C stops it.',
  ].join('\n'),
  options: {
    port: { type: 'string', value: 'N', description: 'port on 127.0.0.1 (default: 4700; 0 picks a free one)' },
    'read-only': { type: 'boolean', description: 'hide retry, cancel, redrive and schedule actions, and refuse them' },
  },
  examples: ['orrery dashboard', 'AWS_PROFILE=oncall orrery dashboard --read-only --port 4800'],
  async run(context, _args, options) {
    const port = intOption(options, 'port', 'dashboard', { min: 0, max: 65_535 }) ?? 4700;
    const { url, source } = resolveApiUrl({
      flag: typeof options.url === 'string' ? options.url : undefined,
      env: context.env,
      cwd: context.cwd,
    });
    let upstream: URL;
    try {
      upstream = new URL(url);
    } catch {
      throw new CliConfigError(`bad API URL ${JSON.stringify(url)} (from ${source})`);
    }
    const { startDashboardServer } = await import('../../dashboard/server');
    const sign = options['no-sign'] ? 'never' : options.sign ? 'always' : 'auto';
    let server: Awaited<ReturnType<typeof startDashboardServer>>;
    try {
      server = await startDashboardServer({
        upstream,
        port,
        sign,
        readOnly: options['read-only'] === true,
        ...(typeof options.region === 'string' ? { region: options.region } : {}),
      });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE') throw new CliConfigError(`port ${port} is in use; pick another with --port`);
      throw error;
    }
    const { style } = context;
    println(context.stdout, `${style.bold('Orrery dashboard')}  ${server.uiUrl}`);
    println(
      context.stdout,
      style.dim(
        `  API ${upstream.origin}${upstream.pathname.replace(/\/$/, '')} (from ${source}), ${sign === 'never' ? 'unsigned' : sign === 'always' ? 'signed' : 'signed unless on loopback'}${options['read-only'] ? ', read-only' : ''}; Ctrl-C to stop`,
      ),
    );
    await (context.untilStopped ?? untilSignal)();
    await server.stop();
    return EXIT.ok;
  },
};
