import type { ScheduleDefinition, ScheduleView } from '../../client';
import { MAX_PRIORITY } from '../../core/priority';
import { type CommandDef, type OptionDef, type OptionValues, UsageError } from '../args';
import { type CommandContext, EXIT, printJson, println } from '../context';
import { details, shortJson, table } from '../format';
import { intOption, payloadOption, stringOption, timeOption } from '../input';

type Command = CommandDef<CommandContext>;

function formatSchedule(schedule: ScheduleView, context: CommandContext): string {
  const { style } = context;
  return details(
    [
      ['name', style.bold(schedule.name)],
      ['type', schedule.type],
      ['state', style.state(schedule.state)],
      [schedule.cron !== null ? 'cron' : 'rate', schedule.cron ?? schedule.rate ?? ''],
      ['expression', `${schedule.expression} ${style.dim(schedule.timezone)}`],
      ['starts', schedule.startAt ?? undefined],
      ['ends', schedule.endAt ?? undefined],
      ['next fire', schedule.nextFireAt ?? undefined],
      ['last fire', schedule.lastFireAt ?? undefined],
      ['last run', schedule.lastRunId ?? undefined],
      ['overlap', schedule.overlap],
      ['max attempts', String(schedule.maxAttempts)],
      ['priority', schedule.priority === undefined ? undefined : String(schedule.priority)],
      ['skipped', schedule.skipped.count > 0 ? String(schedule.skipped.count) : undefined],
      ['missed', schedule.missed > 0 ? String(schedule.missed) : undefined],
      ['payload', schedule.payload === undefined ? undefined : shortJson(schedule.payload)],
      ['created', schedule.createdAt],
      ['updated', schedule.updatedAt],
    ],
    style,
  );
}

function showSchedule(context: CommandContext, schedule: ScheduleView, headline?: string): number {
  if (context.json) {
    printJson(context.stdout, schedule);
    return EXIT.ok;
  }
  if (headline) println(context.stdout, headline);
  println(context.stdout, formatSchedule(schedule, context));
  return EXIT.ok;
}

const definitionOptions: Record<string, OptionDef> = {
  cron: {
    type: 'string',
    value: 'EXPR',
    description: "Unix cron ('30 9 * * 1-5', '@daily') or AWS 'cron(0 9 * * ? *)'",
  },
  rate: { type: 'string', value: 'EXPR', description: "'5 minutes' or 'rate(1 hour)' (instead of --cron)" },
  timezone: { type: 'string', value: 'TZ', description: 'IANA time zone the cron fields are read in (default: UTC)' },
  payload: { type: 'string', value: 'JSON', description: 'payload of each job, a JSON object (default: {})' },
  'payload-file': { type: 'string', value: 'FILE', description: 'read the payload from FILE (- for stdin)' },
  'start-at': { type: 'string', value: 'ISO', description: 'no fire before this time' },
  'end-at': { type: 'string', value: 'ISO', description: 'no fire at or after this time' },
  'max-attempts': { type: 'string', value: 'N', description: "attempts of each job, 1-25 (default: the job type's)" },
  overlap: {
    type: 'string',
    value: 'POLICY',
    description: 'when the previous run is not done: allow, skip or queue-one (default: allow)',
  },
  priority: {
    type: 'string',
    value: 'N',
    description: "priority of each job, 0-10, higher first (types with a priority option; default: the type's)",
  },
};

const OVERLAP = ['allow', 'skip', 'queue-one'] as const;

/** The definition fields given on the command line (only those given). */
async function definitionFrom(
  context: CommandContext,
  options: OptionValues,
  command: string,
): Promise<Partial<ScheduleDefinition>> {
  const cron = stringOption(options, 'cron');
  const rate = stringOption(options, 'rate');
  if (cron !== undefined && rate !== undefined) throw new UsageError('give --cron or --rate, not both', command);
  const overlap = stringOption(options, 'overlap');
  if (overlap !== undefined && !(OVERLAP as readonly string[]).includes(overlap)) {
    throw new UsageError(`--overlap must be one of ${OVERLAP.join(', ')}; got "${overlap}"`, command);
  }
  const fields = {
    type: stringOption(options, 'type'),
    payload: await payloadOption(context, options, command),
    cron,
    rate,
    timezone: stringOption(options, 'timezone'),
    startAt: timeOption(options, 'start-at', command),
    endAt: timeOption(options, 'end-at', command),
    maxAttempts: intOption(options, 'max-attempts', command, { min: 1 }),
    overlap: overlap as (typeof OVERLAP)[number] | undefined,
    priority: intOption(options, 'priority', command, { min: 0, max: MAX_PRIORITY }),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

const list: Command = {
  path: ['schedules', 'list'],
  args: [],
  summary: 'list schedules',
  options: {
    limit: { type: 'string', value: 'N', description: 'show at most N schedules (default: 100)' },
  },
  async run(context, _args, options) {
    const max = intOption(options, 'limit', 'schedules list', { min: 1 }) ?? 100;
    const items = await context
      .client()
      .schedules.list({ limit: Math.min(max, 100) })
      .toArray({ max });
    if (context.json) {
      printJson(context.stdout, { schedules: items });
      return EXIT.ok;
    }
    const { style } = context;
    if (items.length === 0) {
      println(context.stdout, style.dim('no schedules'));
      return EXIT.ok;
    }
    println(
      context.stdout,
      table(
        ['NAME', 'TYPE', 'TRIGGER', 'TIMEZONE', 'STATE', 'NEXT FIRE'],
        items.map((s) => [
          s.name,
          s.type,
          s.cron ?? s.rate ?? s.expression,
          s.timezone,
          style.state(s.state),
          s.nextFireAt ?? style.dim('-'),
        ]),
        style,
      ),
    );
    return EXIT.ok;
  },
};

const get: Command = {
  path: ['schedules', 'get'],
  args: ['name'],
  summary: 'show a schedule',
  options: {},
  async run(context, args) {
    return showSchedule(context, await context.client().schedules.get(args.name as string));
  },
};

const create: Command = {
  path: ['schedules', 'create'],
  args: ['name'],
  summary: 'create a recurring schedule that enqueues a job at each fire',
  description:
    'Idempotent by name: the same definition again prints the schedule; another one is a schedule_exists error.',
  options: {
    type: { type: 'string', value: 'TYPE', description: 'job type to enqueue (required)' },
    ...definitionOptions,
  },
  examples: [
    `orrery schedules create nightly-report --type echo --cron '0 2 * * *' --timezone Europe/Paris`,
    `orrery schedules create heartbeat --type echo --rate '5 minutes' --payload '{"ping":true}' --overlap skip`,
  ],
  async run(context, args, options) {
    const name = 'schedules create';
    const fields = await definitionFrom(context, options, name);
    if (!fields.type) throw new UsageError('--type is required', name);
    if (fields.cron === undefined && fields.rate === undefined) throw new UsageError('give --cron or --rate', name);
    const { created, schedule } = await context
      .client()
      .schedules.create({ ...fields, name: args.name as string, type: fields.type, payload: fields.payload ?? {} });
    const { style } = context;
    const headline = created
      ? `${style.green('created')} schedule ${style.bold(schedule.name)}`
      : `${style.yellow('existing')} schedule ${style.bold(schedule.name)} (same definition, nothing changed)`;
    return showSchedule(context, schedule, headline);
  },
};

const update: Command = {
  path: ['schedules', 'update'],
  args: ['name'],
  summary: 'change a schedule: the options given replace those fields, the rest is kept',
  description:
    'Reads the schedule, applies the options given, and writes the whole definition back (PUT).\n' +
    '--cron replaces a rate and --rate replaces a cron.',
  options: {
    type: { type: 'string', value: 'TYPE', description: 'job type to enqueue' },
    ...definitionOptions,
  },
  examples: [`orrery schedules update nightly-report --cron '0 3 * * *'`],
  async run(context, args, options) {
    const name = 'schedules update';
    const changes = await definitionFrom(context, options, name);
    if (Object.keys(changes).length === 0) {
      throw new UsageError(
        `nothing to change: give one of --type, --${Object.keys(definitionOptions).join(', --')}`,
        name,
      );
    }
    const client = context.client();
    const current = await client.schedules.get(args.name as string);
    const kept = {
      type: current.type,
      payload: (current.payload ?? {}) as Record<string, unknown>,
      timezone: current.timezone,
      maxAttempts: current.maxAttempts,
      overlap: current.overlap,
      ...(current.priority !== undefined ? { priority: current.priority } : {}),
      ...(changes.cron === undefined && changes.rate === undefined
        ? current.cron !== null
          ? { cron: current.cron }
          : { rate: current.rate ?? current.expression }
        : {}),
      ...(current.startAt !== null ? { startAt: current.startAt } : {}),
      ...(current.endAt !== null ? { endAt: current.endAt } : {}),
    };
    const schedule = await client.schedules.update(args.name as string, { ...kept, ...changes } as ScheduleDefinition);
    return showSchedule(
      context,
      schedule,
      `${context.style.green('updated')} schedule ${context.style.bold(schedule.name)}`,
    );
  },
};

function stateChange(verb: 'pause' | 'resume', summary: string): Command {
  return {
    path: ['schedules', verb],
    args: ['name'],
    summary,
    options: {},
    async run(context, args) {
      const schedules = context.client().schedules;
      const schedule = await (verb === 'pause'
        ? schedules.pause(args.name as string)
        : schedules.resume(args.name as string));
      return showSchedule(
        context,
        schedule,
        `${context.style.state(schedule.state, verb === 'pause' ? 'paused' : 'resumed')} schedule ${context.style.bold(schedule.name)}`,
      );
    },
  };
}

const remove: Command = {
  path: ['schedules', 'delete'],
  args: ['name'],
  summary: 'delete a schedule (jobs it already enqueued are kept)',
  options: {},
  async run(context, args) {
    await context.client().schedules.delete(args.name as string);
    if (context.json) printJson(context.stdout, { name: args.name, deleted: true });
    else println(context.stdout, `deleted schedule ${context.style.bold(args.name as string)}`);
    return EXIT.ok;
  },
};

export const scheduleCommands: Command[] = [
  list,
  get,
  create,
  update,
  stateChange('pause', 'pause a schedule: it stops enqueueing until resumed'),
  stateChange('resume', 'resume a paused schedule'),
  remove,
];
