import type { JobView } from '../../client';
import { SETTLED_STATES } from '../../core/states';
import type { CommandDef } from '../args';
import { type CommandContext, EXIT, println } from '../context';
import { formatJob, type Style, stripAnsi, visibleLength } from '../format';
import { intOption } from '../input';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

function clock(now: number): string {
  return new Date(now).toISOString().slice(11, 23);
}

/** One line per state change: `10:00:01.234  running    attempt 1 of 3`. */
function changeLine(job: JobView, now: number, style: Style): string {
  const detail =
    job.state === 'retrying' || job.state === 'failed' || job.state === 'held'
      ? job.lastError
        ? `  ${style.red(job.lastError.message)}`
        : ''
      : job.state === 'scheduled' || job.state === 'queued'
        ? `  runs at ${job.runAt}`
        : '';
  return `${style.dim(clock(now))}  ${style.state(job.state, job.state.padEnd(9))}  attempt ${job.attempts} of ${job.maxAttempts}${detail}`;
}

/** The line redrawn in place on a terminal. */
function liveLine(job: JobView, frame: number, elapsedMs: number, style: Style): string {
  const progress = job.progress
    ? `  ${job.progress.percent}%${job.progress.detail ? ` ${job.progress.detail}` : ''}`
    : '';
  return `${SPINNER[frame % SPINNER.length]} ${style.state(job.state)}${progress}  ${style.dim(`${(elapsedMs / 1000).toFixed(1)}s`)}`;
}

function fitToWidth(text: string, columns: number | undefined): string {
  if (!columns || visibleLength(text) < columns) return text;
  // Too wide lines wrap, and `\r` would then redraw only their last row: drop the colours and cut.
  return `${stripAnsi(text).slice(0, columns - 2)}…`;
}

export const watch: CommandDef<CommandContext> = {
  path: ['watch'],
  args: ['id'],
  summary: 'follow a job until it ends',
  description:
    'Prints a line at every state change; on a terminal the current state, progress and elapsed time are\n' +
    'redrawn in place. With --json, prints the job as one JSON line at every change (the last line is the\n' +
    'final job). Exit code 0 when the job succeeded, 3 when it ended failed, cancelled or expired, 4 on --timeout.',
  options: {
    interval: { type: 'string', value: 'MS', description: 'milliseconds between polls (default: 500)' },
    timeout: { type: 'string', value: 'SECONDS', description: 'give up after this long (default: never)' },
  },
  examples: ['orrery watch order-1234', 'orrery watch order-1234 --timeout 60 && echo done'],
  async run(context, args, options) {
    const interval = intOption(options, 'interval', 'watch', { min: 50 }) ?? 500;
    const timeoutSeconds = intOption(options, 'timeout', 'watch', { min: 1 });
    const { stdout, style } = context;
    const live = stdout.isTTY === true && !context.json;
    const started = context.now();
    let lastKey = '';
    let frame = 0;
    let drawn = false;
    const clearLive = () => {
      if (drawn) stdout.write('\r\u001b[2K');
      drawn = false;
    };

    for (;;) {
      const job = await context.client().get(args.id as string);
      const now = context.now();
      const key = `${job.state}/${job.attempts}`;
      if (key !== lastKey) {
        lastKey = key;
        clearLive();
        if (context.json) stdout.write(`${JSON.stringify(job)}\n`);
        else println(stdout, changeLine(job, now, style));
      }
      // held: nothing runs it again until an operator acts; watching on would wait for them
      if (SETTLED_STATES.includes(job.state)) {
        clearLive();
        if (!context.json) {
          println(stdout);
          println(stdout, formatJob(job, style));
        }
        return job.state === 'succeeded' ? EXIT.ok : EXIT.jobFailed;
      }
      if (timeoutSeconds !== undefined && now - started >= timeoutSeconds * 1000) {
        clearLive();
        context.stderr.write(`watch: job ${job.id} is still ${job.state} after ${timeoutSeconds} s\n`);
        return EXIT.timeout;
      }
      if (live) {
        stdout.write(`\r\u001b[2K${fitToWidth(liveLine(job, frame++, now - started, style), stdout.columns)}`);
        drawn = true;
      }
      await context.sleep(interval);
    }
  },
};
