import { shortPrincipal } from '../../core/access';
import type { CommandDef } from '../args';
import { type CommandContext, EXIT, printJson, println } from '../context';
import { table } from '../format';
import { intOption } from '../input';

type Command = CommandDef<CommandContext>;

const list: Command = {
  path: ['dlq', 'list'],
  args: ['type'],
  summary: "show messages in a job type's dead-letter queue (without consuming them)",
  options: {
    limit: { type: 'string', value: 'N', description: 'messages to look at, 1-10 (default: 10)' },
  },
  examples: ['orrery dlq list send-email'],
  async run(context, args, options) {
    const limit = intOption(options, 'limit', 'dlq list', { min: 1, max: 10 });
    const listing = await context.client().dlq.list(args.type as string, limit === undefined ? {} : { limit });
    if (context.json) {
      printJson(context.stdout, listing);
      return EXIT.ok;
    }
    const { style } = context;
    const { messages, approximateDepth, lastRedrive } = listing;
    println(
      context.stdout,
      `${style.bold(`${args.type} DLQ`)}: about ${approximateDepth.visible} messages waiting, ${approximateDepth.inFlight} in flight`,
    );
    if (lastRedrive) {
      const moved = lastRedrive.moved !== undefined ? `${lastRedrive.moved} moved` : 'by an SQS move task';
      println(
        context.stdout,
        style.dim(`last redriven by ${shortPrincipal(lastRedrive.by)} at ${lastRedrive.at} (${moved})`),
      );
    }
    if (messages.length === 0) {
      println(context.stdout, style.dim(`no messages in the ${args.type} DLQ`));
      return EXIT.ok;
    }
    println(
      context.stdout,
      table(
        ['MESSAGE ID', 'JOB ID', 'RECEIVES', 'SENT', 'BODY'],
        messages.map((m) => [
          m.messageId,
          m.jobId ?? style.dim('-'),
          String(m.receiveCount),
          m.sentAt ?? '',
          m.body ? JSON.stringify(m.body).slice(0, 60) : '',
        ]),
        style,
      ),
    );
    return EXIT.ok;
  },
};

const redrive: Command = {
  path: ['dlq', 'redrive'],
  args: ['type'],
  summary: "move a job type's dead-letter messages back to its ready queue",
  options: {
    'max-messages': {
      type: 'string',
      value: 'N',
      description: 'most messages to move when the API moves them itself, 1-1000 (default: 100)',
    },
  },
  examples: ['orrery dlq redrive send-email'],
  async run(context, args, options) {
    const maxMessages = intOption(options, 'max-messages', 'dlq redrive', { min: 1 });
    const result = await context
      .client()
      .dlq.redrive(args.type as string, maxMessages === undefined ? {} : { maxMessages });
    if (context.json) {
      printJson(context.stdout, result);
      return EXIT.ok;
    }
    const { style } = context;
    if (result.method === 'move-task') {
      const count = result.approximateMessages === null ? '' : ` (about ${result.approximateMessages} messages)`;
      println(
        context.stdout,
        `${style.green(result.status === 'started' ? 'started' : 'already running')}: SQS is moving the ${args.type} DLQ back to its ready queue${count}`,
      );
      if (result.taskHandle) println(context.stdout, style.dim(`  task ${result.taskHandle}`));
    } else {
      println(
        context.stdout,
        `${style.green('moved')} ${result.moved} messages of the ${args.type} DLQ back to its ready queue; about ${result.remaining} left (stopped: ${result.stoppedBy})`,
      );
    }
    return EXIT.ok;
  },
};

export const dlqCommands: Command[] = [list, redrive];
