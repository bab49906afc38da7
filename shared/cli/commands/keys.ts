import type { CommandDef } from '../args';
import { type CommandContext, EXIT, printJson, println } from '../context';
import { table } from '../format';

type Command = CommandDef<CommandContext>;

const keyState: Command = {
  path: ['key'],
  args: ['type', 'key'],
  summary: "show a key's flow control: who holds its slots, how many wait, a throttle's next turn",
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
      rows.push([`concurrency[${l.index}]`, l.key, String(l.limit), holders(l.running), String(l.waiting), '']);
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

export const keyCommands: Command[] = [keyState];
