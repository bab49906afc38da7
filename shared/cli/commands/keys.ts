import type { KeyLimits } from '../../client';
import { MAX_CONCURRENCY_LIMIT } from '../../core/flow';
import { type CommandDef, UsageError } from '../args';
import { type CommandContext, EXIT, printJson, println } from '../context';
import { table } from '../format';
import { intOption } from '../input';

type Command = CommandDef<CommandContext>;

const keyState: Command = {
  path: ['key'],
  args: ['type', 'key'],
  summary:
    "show a key's flow control: who holds its slots, how many wait, where each limit comes from, a throttle's next turn",
  options: {},
  examples: ['orrery key tenant-sync tenant-42', 'orrery key api-call k1 --json'],
  async run(context, args) {
    const state = await context.client().keyState(args.type as string, args.key as string);
    if (context.json) {
      printJson(context.stdout, state);
      return EXIT.ok;
    }
    const { style } = context;
    const rows: string[][] = [];
    const holders = (running: { jobId: string }[]) =>
      running.length === 0 ? style.dim('-') : running.map((r) => r.jobId).join(', ');
    if (state.singleton) {
      const s = state.singleton;
      rows.push([`singleton (${s.mode}, scope ${s.scope})`, s.key, '1', holders(s.running), String(s.waiting), '']);
    }
    for (const l of state.limits) {
      rows.push([`concurrency[${l.index}]`, l.key, limitText(l, style), holders(l.running), String(l.waiting), '']);
    }
    for (const [what, p] of [
      ['throttle', state.throttle],
      ['rate limit', state.rateLimit],
    ] as const) {
      if (!p) continue;
      const burst = p.burst === undefined ? '' : `, burst ${p.burst}`;
      rows.push([what, p.key, `${p.limit}/${p.periodSeconds}s${burst}`, '', '', `next start ${p.nextStartAt}`]);
    }
    if (state.debounce) {
      const d = state.debounce;
      const open = d.run ? `run ${d.run}, window since ${d.since}` : style.dim('no window open');
      rows.push(['debounce', d.key, `quiet ${d.periodSeconds}s`, '', '', open]);
    }
    println(context.stdout, `${style.bold(`${state.type} / ${state.key}`)}`);
    println(context.stdout, table(['CONTROL', 'KEY', 'LIMIT', 'RUNNING', 'WAITING', 'NEXT'], rows, style));
    return EXIT.ok;
  },
};

/** A limit and where it comes from: `5 (set by role/ops; spec 2)`, or `2` when the spec's holds. */
function limitText(
  l: { limit: number; specLimit: number; source: 'spec' | 'runtime'; setBy?: string | undefined },
  style: CommandContext['style'],
): string {
  if (l.source === 'spec') return String(l.limit);
  const by = l.setBy ? ` by ${l.setBy.replace(/^arn:[^:]+:(iam|sts)::\d{12}:/, '')}` : '';
  return `${l.limit} ${style.dim(`(set at run time${by}; spec ${l.specLimit})`)}`;
}

function showLimits(context: CommandContext, answer: KeyLimits, headline: string): number {
  if (context.json) {
    printJson(context.stdout, answer);
    return EXIT.ok;
  }
  const { style } = context;
  println(context.stdout, headline);
  const rows = answer.limits.map((l) => [
    `concurrency[${l.index}]`,
    l.key,
    limitText(l, style),
    String(l.running.length),
    String(l.waiting),
  ]);
  println(context.stdout, table(['CONTROL', 'KEY', 'LIMIT', 'RUNNING', 'WAITING'], rows, style));
  if (answer.handedOn.length > 0) println(context.stdout, `started now: ${answer.handedOn.join(', ')}`);
  return EXIT.ok;
}

const setLimits: Command = {
  path: ['limits', 'set'],
  args: ['type', 'key'],
  summary: "set a key's concurrency limit at run time (from the next start; a raise starts waiting jobs now)",
  options: {
    concurrency: { type: 'string', value: 'N', description: `the limit, 1-${MAX_CONCURRENCY_LIMIT} (required)` },
    limit: {
      type: 'string',
      value: 'I',
      description: "which of the type's concurrency limits (default: the first keyed one, or the only one)",
    },
  },
  examples: [
    'orrery limits set tenant-sync tenant-42 --concurrency 10',
    "orrery limits set api-call '*' --concurrency 5 --limit 1",
  ],
  async run(context, args, options) {
    const concurrency = intOption(options, 'concurrency', 'limits set', { min: 1, max: MAX_CONCURRENCY_LIMIT });
    if (concurrency === undefined) throw new UsageError('--concurrency is required', 'limits set');
    const limit = intOption(options, 'limit', 'limits set', { min: 0 });
    const type = args.type as string;
    const key = args.key as string;
    const answer = await context
      .client()
      .setKeyLimits(type, key, { concurrency, ...(limit === undefined ? {} : { limit }) });
    return showLimits(context, answer, `set the concurrency limit of ${type} / ${key} to ${concurrency}`);
  },
};

const unsetLimits: Command = {
  path: ['limits', 'unset'],
  args: ['type', 'key'],
  summary: "remove a key's run-time concurrency limit: the spec's holds again",
  options: {
    limit: {
      type: 'string',
      value: 'I',
      description: "which of the type's concurrency limits (default: the first keyed one, or the only one)",
    },
  },
  examples: ['orrery limits unset tenant-sync tenant-42'],
  async run(context, args, options) {
    const limit = intOption(options, 'limit', 'limits unset', { min: 0 });
    const type = args.type as string;
    const key = args.key as string;
    const answer = await context.client().clearKeyLimits(type, key, limit === undefined ? {} : { limit });
    return showLimits(context, answer, `removed the run-time concurrency limit of ${type} / ${key}`);
  },
};

export const keyCommands: Command[] = [keyState, setLimits, unsetLimits];
