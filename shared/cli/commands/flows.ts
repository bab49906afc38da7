import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { FlowJob, FlowView, UntypedJobs } from '../../client';
import { type CommandDef, UsageError } from '../args';
import { type CommandContext, EXIT, printJson, println } from '../context';
import { table } from '../format';
import { stringOption } from '../input';

type Command = CommandDef<CommandContext>;

function showFlow(context: CommandContext, flow: FlowView, headline?: string): number {
  if (context.json) {
    printJson(context.stdout, flow);
    return EXIT.ok;
  }
  const { style } = context;
  if (headline) println(context.stdout, headline);
  const rows = flow.nodes.map((node) => [
    node.id,
    node.type,
    node.state ?? style.dim('gone'),
    node.dependsOn.length === 0
      ? style.dim('-')
      : node.dependsOn.map((d) => (d.onParentFailure === 'fail' ? d.id : `${d.id} (${d.onParentFailure})`)).join(', '),
    node.children.length === 0 ? style.dim('-') : node.children.join(', '),
  ]);
  println(context.stdout, `${style.bold(`flow ${flow.id}`)}  created ${flow.createdAt}`);
  println(context.stdout, table(['JOB', 'TYPE', 'STATE', 'DEPENDS ON', 'CHILDREN'], rows, style));
  return EXIT.ok;
}

const create: Command = {
  path: ['flow', 'create'],
  args: [],
  summary: 'enqueue a DAG of up to 100 jobs, all or nothing',
  description:
    'FILE holds { "id"?: string, "jobs": [{ "id", "type", "payload", "dependsOn"?: [...] }, ...] }.\n' +
    'The whole flow is checked first: a cycle, an unknown parent or an invalid job writes nothing.\n' +
    'Idempotent by flow id: sending the same file again prints the flow.',
  options: {
    file: { type: 'string', value: 'FILE', description: 'the flow, as JSON (- for stdin; required)' },
  },
  examples: ['orrery flow create --file pipeline.json', 'cat pipeline.json | orrery flow create --file -'],
  async run(context, _args, options) {
    const name = 'flow create';
    const file = stringOption(options, 'file');
    if (file === undefined) throw new UsageError('--file is required', name);
    let text: string;
    try {
      text = file === '-' ? await context.readStdin() : readFileSync(resolve(context.cwd, file), 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read --file ${file}: ${(error as Error).message}`, name);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`${file} is not valid JSON: ${(error as Error).message}`, name);
    }
    const { id, jobs } = (body ?? {}) as { id?: unknown; jobs?: unknown };
    if (!Array.isArray(jobs)) throw new UsageError(`${file} must be a JSON object with a "jobs" array`, name);
    const { created, flow } = await context
      .client()
      .createFlow(jobs as FlowJob<UntypedJobs>[], typeof id === 'string' ? { id } : {});
    const { style } = context;
    const headline = created
      ? `${style.green('created')} flow ${style.bold(flow.id)}`
      : `${style.yellow('existing')} flow ${style.bold(flow.id)} (written before, nothing new was created)`;
    return showFlow(context, flow, headline);
  },
};

const get: Command = {
  path: ['flow', 'get'],
  args: ['id'],
  summary: "show a flow's graph and each job's state",
  options: {},
  examples: ['orrery flow get etl-2026-06-01', 'orrery flow get etl-2026-06-01 --json'],
  async run(context, args) {
    return showFlow(context, await context.client().getFlow(args.id as string));
  },
};

export const flowCommands: Command[] = [create, get];
