import type { EventJobs, EventView } from '../../client';
import { type CommandDef, UsageError } from '../args';
import { type CommandContext, EXIT, printJson, println } from '../context';
import { table } from '../format';
import { payloadOption, stringOption } from '../input';

type Command = CommandDef<CommandContext>;

function showEvent(context: CommandContext, event: EventView): number {
  if (context.json) {
    printJson(context.stdout, event);
    return EXIT.ok;
  }
  const { style } = context;
  println(context.stdout, `${style.bold(`event ${event.id}`)}  ${event.name}`);
  if (event.jobs.length === 0) {
    println(context.stdout, style.dim('no job: every subscribed type turned it down'));
    return EXIT.ok;
  }
  const rows = event.jobs.map((j) => [
    j.type,
    j.id,
    j.status === 'created' ? style.green('created') : style.yellow('existing'),
    j.state,
  ]);
  println(context.stdout, table(['TYPE', 'JOB', 'STATUS', 'STATE'], rows, style));
  return EXIT.ok;
}

const send: Command = {
  path: ['event', 'send'],
  args: ['name'],
  summary: 'send an event: each job type that subscribes to it gets one job',
  description:
    'The data must match the event’s schema, or nothing is written (400).\n' +
    'Give --id to make a resend safe: the same id makes nothing new.',
  options: {
    data: { type: 'string', value: 'JSON', description: 'the event data, a JSON object (required, or --data-file)' },
    'data-file': { type: 'string', value: 'FILE', description: 'read the data from FILE (- for stdin)' },
    id: { type: 'string', value: 'ID', description: 'the event id (default: a random UUID)' },
  },
  examples: [`orrery event send order.placed --id order-o1 --data '{"orderId":"o1","total":12}'`],
  async run(context, args, options) {
    const name = 'event send';
    const data = await payloadOption(context, options, name, 'data');
    if (data === undefined) throw new UsageError('--data or --data-file is required', name);
    const id = stringOption(options, 'id');
    const event = await context.client().sendEvent(args.name as string, data, id === undefined ? {} : { id });
    return showEvent(context, event);
  },
};

const get: Command = {
  path: ['event', 'get'],
  args: ['id'],
  summary: 'show the jobs an event made',
  options: {},
  examples: ['orrery event get order-o1', 'orrery event get order-o1 --json'],
  async run(context, args) {
    const found: EventJobs = await context.client().getEvent(args.id as string);
    if (context.json) {
      printJson(context.stdout, found);
      return EXIT.ok;
    }
    const { style } = context;
    println(context.stdout, style.bold(`event ${found.id}`));
    println(
      context.stdout,
      table(
        ['TYPE', 'JOB', 'STATE', 'CREATED'],
        found.jobs.map((j) => [j.type, j.id, j.state, j.createdAt]),
        style,
      ),
    );
    return EXIT.ok;
  },
};

export const eventCommands: Command[] = [send, get];
