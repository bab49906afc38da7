import type { KeyLimits } from '../../client';
import { fairWeightProblem, MAX_FAIR_WEIGHT } from '../../core/fair-share';
import { MAX_CONCURRENCY_LIMIT } from '../../core/flow';
import { type CommandDef, type OptionValues, UsageError } from '../args';
import { type CommandContext, EXIT, printJson, println } from '../context';
import { table } from '../format';
import { intOption, stringOption } from '../input';

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
      if (l.fair) {
        const f = l.fair;
        const weight = `weight ${f.weight}${f.weightSource === 'runtime' ? style.dim(' (set at run time)') : ''}`;
        rows.push([`  fair share[${l.index}]`, f.key, weight, String(f.running), String(f.waiting), '']);
      }
    }
    for (const [what, p] of [
      ['throttle', state.throttle],
      ['rate limit', state.rateLimit],
    ] as const) {
      if (!p) continue;
      rows.push([what, p.key, paceText(p, style), '', '', `next start ${p.nextStartAt}`]);
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

/** A throttle or rate limit and where it comes from: `10/1s, burst 5 (set at run time; spec 5/1s)`. */
function paceText(
  p: {
    limit: number;
    periodSeconds: number;
    burst?: number | undefined;
    source?: string;
    specLimit?: number;
    specPeriodSeconds?: number;
  },
  style: CommandContext['style'],
): string {
  const text = `${p.limit}/${p.periodSeconds}s${p.burst === undefined ? '' : `, burst ${p.burst}`}`;
  if (p.source !== 'runtime') return text;
  return `${text} ${style.dim(`(set at run time; spec ${p.specLimit}/${p.specPeriodSeconds}s)`)}`;
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
  for (const [what, p] of [
    ['throttle', answer.throttle],
    ['rate limit', answer.rateLimit],
  ] as const) {
    if (p) rows.push([what, p.key, paceText(p, style), '', '']);
  }
  println(context.stdout, table(['CONTROL', 'KEY', 'LIMIT', 'RUNNING', 'WAITING'], rows, style));
  if (answer.handedOn.length > 0) println(context.stdout, `started now: ${answer.handedOn.join(', ')}`);
  return EXIT.ok;
}

const setLimits: Command = {
  path: ['limits', 'set'],
  args: ['type', 'key'],
  summary:
    "set a key's concurrency limit (from the next start; a raise starts waiting jobs now) or its weight in a limit shared fairly",
  options: {
    concurrency: { type: 'string', value: 'N', description: `the limit, 1-${MAX_CONCURRENCY_LIMIT}` },
    weight: {
      type: 'string',
      value: 'W',
      description: `the key's weight in the type's limit shared fairly (fairBy), more than 0 and at most ${MAX_FAIR_WEIGHT}`,
    },
    throttle: { type: 'string', value: 'N/S', description: "the key's throttle: N starts per S seconds" },
    burst: { type: 'string', value: 'B', description: "the throttle's burst (with --throttle; default 1)" },
    'rate-limit': { type: 'string', value: 'N/S', description: "the key's rate limit: N jobs accepted per S seconds" },
    limit: {
      type: 'string',
      value: 'I',
      description: "which of the type's concurrency limits (default: the first keyed one, or the only one)",
    },
  },
  examples: [
    'orrery limits set tenant-sync tenant-42 --concurrency 10',
    "orrery limits set api-call '*' --concurrency 5 --limit 1",
    'orrery limits set tenant-sync tenant-42 --weight 3',
    'orrery limits set api-call k1 --throttle 10/1 --burst 5',
  ],
  async run(context, args, options) {
    const concurrency = intOption(options, 'concurrency', 'limits set', { min: 1, max: MAX_CONCURRENCY_LIMIT });
    const weight = weightOption(options);
    const throttle = rateOption(options, 'throttle');
    const burst = intOption(options, 'burst', 'limits set', { min: 1 });
    const rateLimit = rateOption(options, 'rate-limit');
    if ([concurrency, weight, throttle, rateLimit].every((v) => v === undefined)) {
      throw new UsageError('--concurrency, --weight, --throttle or --rate-limit is required', 'limits set');
    }
    if (burst !== undefined && throttle === undefined)
      throw new UsageError('--burst goes with --throttle', 'limits set');
    const limit = intOption(options, 'limit', 'limits set', { min: 0 });
    const type = args.type as string;
    const key = args.key as string;
    const input = {
      ...(concurrency === undefined ? {} : { concurrency, ...(limit === undefined ? {} : { limit }) }),
      ...(weight === undefined ? {} : { weight }),
      ...(throttle === undefined ? {} : { throttle: { ...throttle, ...(burst === undefined ? {} : { burst }) } }),
      ...(rateLimit === undefined ? {} : { rateLimit }),
    };
    const answer = await context.client().setKeyLimits(type, key, input);
    const what = [
      ...(concurrency === undefined ? [] : [`the concurrency limit of ${type} / ${key} to ${concurrency}`]),
      ...(weight === undefined ? [] : [`the weight of ${type} / ${key} to ${weight}`]),
      ...(throttle === undefined
        ? []
        : [`the throttle of ${type} / ${key} to ${throttle.limit}/${throttle.periodSeconds}s`]),
      ...(rateLimit === undefined
        ? []
        : [`the rate limit of ${type} / ${key} to ${rateLimit.limit}/${rateLimit.periodSeconds}s`]),
    ].join(' and ');
    return showLimits(context, answer, `set ${what}`);
  },
};

const unsetLimits: Command = {
  path: ['limits', 'unset'],
  args: ['type', 'key'],
  summary: "remove a key's run-time concurrency limit (or, with --weight, its weight): the spec's holds again",
  options: {
    limit: {
      type: 'string',
      value: 'I',
      description: "which of the type's concurrency limits (default: the first keyed one, or the only one)",
    },
    weight: { type: 'boolean', description: "remove the key's weight in the limit shared fairly instead" },
    throttle: { type: 'boolean', description: "remove the key's throttle instead" },
    'rate-limit': { type: 'boolean', description: "remove the key's rate limit instead" },
  },
  examples: ['orrery limits unset tenant-sync tenant-42', 'orrery limits unset tenant-sync tenant-42 --weight'],
  async run(context, args, options) {
    const limit = intOption(options, 'limit', 'limits unset', { min: 0 });
    const type = args.type as string;
    const key = args.key as string;
    const picked = (['weight', 'throttle', 'rate-limit'] as const).filter((name) => options[name] === true);
    if (picked.length > 1) throw new UsageError('give one of --weight, --throttle and --rate-limit', 'limits unset');
    const flag = picked[0];
    const field = flag === 'rate-limit' ? 'rateLimit' : flag;
    const answer = await context
      .client()
      .clearKeyLimits(type, key, { ...(limit === undefined ? {} : { limit }), ...(field ? { field } : {}) });
    const what = flag === undefined ? 'concurrency limit' : flag.replace('-', ' ');
    return showLimits(context, answer, `removed the run-time ${what} of ${type} / ${key}`);
  },
};

/** `--throttle N/S` or `--rate-limit N/S`: a limit per period in seconds (the API checks their ranges). */
function rateOption(options: OptionValues, name: string): { limit: number; periodSeconds: number } | undefined {
  const text = stringOption(options, name);
  if (text === undefined) return undefined;
  const match = /^(\d+)\/(\d+)s?$/.exec(text.trim());
  if (!match) throw new UsageError(`--${name} takes N/S: N per S seconds (e.g. 10/1)`, 'limits set');
  return { limit: Number(match[1]), periodSeconds: Number(match[2]) };
}

/** `--weight W`: a number, checked as the API checks it. */
function weightOption(options: OptionValues): number | undefined {
  const text = stringOption(options, 'weight');
  if (text === undefined) return undefined;
  const value = Number(text);
  const problem = fairWeightProblem(text.trim() === '' ? Number.NaN : value);
  if (problem) throw new UsageError(`--weight ${problem}`, 'limits set');
  return value;
}

const typeKeys: Command = {
  path: ['keys'],
  args: ['type'],
  summary:
    "list the keys of a type's unkeyed and fair concurrency limits: running, waiting, and each fair key's weight",
  options: {},
  examples: ['orrery keys tenant-sync', 'orrery keys tenant-sync --json'],
  async run(context, args) {
    const answer = await context.client().typeKeys(args.type as string);
    if (context.json) {
      printJson(context.stdout, answer);
      return EXIT.ok;
    }
    const { style } = context;
    const rows: string[][] = [];
    for (const l of answer.limits) {
      if (l.keyed) {
        rows.push([`concurrency[${l.index}]`, style.dim('(keyed: look a key up with orrery key)'), '', '', '']);
        continue;
      }
      rows.push([
        `concurrency[${l.index}]`,
        '*',
        String(l.limit ?? ''),
        String(l.running ?? 0),
        String(l.waiting ?? 0),
      ]);
      for (const k of l.keys) {
        const weight = `weight ${k.weight}${k.weightSource === 'runtime' ? style.dim(' (set at run time)') : ''}`;
        rows.push(['  fair key', k.key, weight, String(k.running), String(k.waiting)]);
      }
    }
    println(context.stdout, style.bold(args.type as string));
    println(context.stdout, table(['CONTROL', 'KEY', 'LIMIT', 'RUNNING', 'WAITING'], rows, style));
    return EXIT.ok;
  },
};

export const keyCommands: Command[] = [keyState, typeKeys, setLimits, unsetLimits];
