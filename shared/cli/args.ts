/**
 * Argument parsing on `node:util` `parseArgs`: finds the command (`dlq list`), then parses
 * its options and the global ones strictly, and generates `--help` text from the same table.
 */
import { parseArgs } from 'node:util';

/** Wrong usage: unknown command or option, missing argument, bad value. Exit code 2. */
export class UsageError extends Error {
  /** The command whose `--help` to point at (`dlq list`), if known. */
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

export interface OptionDef {
  type: 'string' | 'boolean';
  short?: string;
  /** Placeholder in help (`JSON`, `N`). */
  value?: string;
  description: string;
}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface CommandDef<Context> {
  /** Words naming the command: `['dlq', 'list']`. */
  path: string[];
  /** Positional arguments, in order (`['id']` → `<id>`). */
  args: string[];
  summary: string;
  /** Longer text under the usage line. */
  description?: string;
  options: Record<string, OptionDef>;
  examples?: string[];
  run(context: Context, args: Record<string, string>, options: OptionValues): Promise<number>;
}

export const GLOBAL_OPTIONS: Record<string, OptionDef> = {
  url: {
    type: 'string',
    value: 'URL',
    description: 'API base URL (default: $ORRERY_URL, then ApiUrl in .orrery/outputs.json)',
  },
  region: {
    type: 'string',
    value: 'REGION',
    description: 'region to sign for (default: from the URL, then $AWS_REGION)',
  },
  'no-sign': {
    type: 'boolean',
    description: 'send requests unsigned (127.0.0.1/localhost URLs are unsigned unless --sign)',
  },
  sign: {
    type: 'boolean',
    description:
      'sign even requests to a 127.0.0.1/localhost API (orrery dev with grants), with the AWS SDK default credentials',
  },
  json: { type: 'boolean', description: 'print JSON for scripts instead of tables' },
  'no-color': { type: 'boolean', description: 'no colours (also when NO_COLOR is set or output is not a terminal)' },
  help: { type: 'boolean', short: 'h', description: 'show help' },
};

export type Parsed<Context> =
  | { kind: 'help'; command: CommandDef<Context> | undefined; group: string | undefined }
  | { kind: 'version' }
  | { kind: 'run'; command: CommandDef<Context>; args: Record<string, string>; options: OptionValues };

function toParseArgsOptions(defs: Record<string, OptionDef>) {
  return Object.fromEntries(
    Object.entries(defs).map(([name, def]) => [name, { type: def.type, ...(def.short ? { short: def.short } : {}) }]),
  );
}

/**
 * Finds and parses the command in `argv`. Global options may come anywhere. Throws
 * {@link UsageError} for anything wrong.
 */
export function parseCommandLine<Context>(argv: string[], commands: readonly CommandDef<Context>[]): Parsed<Context> {
  // First pass, lenient, with every option known to any command: only to find the command words.
  const allOptions: Record<string, OptionDef> = { ...GLOBAL_OPTIONS, version: { type: 'boolean', description: '' } };
  for (const command of commands) Object.assign(allOptions, command.options);
  const loose = parseArgs({
    args: argv,
    options: toParseArgsOptions(allOptions),
    strict: false,
    allowPositionals: true,
  });
  let words = loose.positionals;
  let help = loose.values.help === true;
  if (words[0] === 'help') {
    // `orrery help [command]` is `orrery [command] --help`.
    words = words.slice(1);
    help = true;
  }

  const command = [...commands]
    .sort((a, b) => b.path.length - a.path.length)
    .find((candidate) => candidate.path.every((word, i) => words[i] === word));

  if (!command) {
    if (words.length === 0) {
      if (loose.values.version === true) return { kind: 'version' };
      if (help) return { kind: 'help', command: undefined, group: undefined };
      throw new UsageError('no command given');
    }
    const group = words[0] as string;
    const inGroup = commands.filter((candidate) => candidate.path.length > 1 && candidate.path[0] === group);
    if (inGroup.length > 0) {
      if (help || words.length === 1) {
        if (help) return { kind: 'help', command: undefined, group };
        throw new UsageError(`${group}: which one? ${inGroup.map((c) => c.path[1]).join(', ')}`, group);
      }
      throw new UsageError(`unknown command "${group} ${words[1]}"`, group);
    }
    throw new UsageError(`unknown command "${group}"`);
  }

  const name = command.path.join(' ');
  if (help) return { kind: 'help', command, group: undefined };
  if (loose.positionals[0] === 'help') throw new UsageError('help takes a command name', name);

  let strict: ReturnType<typeof parseArgs>;
  try {
    strict = parseArgs({
      args: argv,
      options: toParseArgsOptions({ ...GLOBAL_OPTIONS, ...command.options }),
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    // parseArgs messages are good ("Unknown option '--x'", "Option '--type <value>' argument missing").
    const message =
      error instanceof Error ? error.message.replace(/\. To specify a positional.*$/s, '') : String(error);
    throw new UsageError(message, name);
  }
  const rest = strict.positionals.slice(command.path.length);
  const missing = command.args.slice(rest.length);
  if (missing.length > 0) throw new UsageError(`missing ${missing.map((a) => `<${a}>`).join(' ')}`, name);
  if (rest.length > command.args.length) {
    throw new UsageError(`unexpected argument "${rest[command.args.length]}"`, name);
  }
  const args = Object.fromEntries(command.args.map((arg, i) => [arg, rest[i] as string]));
  return { kind: 'run', command, args, options: strict.values as OptionValues };
}

function optionLines(defs: Record<string, OptionDef>): string[] {
  const labels = Object.entries(defs).map(([name, def]) => {
    const flag = `${def.short ? `-${def.short}, ` : '    '}--${name}${def.value ? ` ${def.value}` : ''}`;
    return [flag, def.description] as const;
  });
  const width = Math.max(...labels.map(([flag]) => flag.length));
  return labels.map(([flag, description]) => `  ${flag.padEnd(width)}  ${description}`);
}

export function usageLine(command: CommandDef<unknown>): string {
  const args = command.args.map((arg) => `<${arg}>`).join(' ');
  return `orrery ${command.path.join(' ')}${args ? ` ${args}` : ''}${Object.keys(command.options).length ? ' [options]' : ''}`;
}

export function commandHelp(command: CommandDef<unknown>): string {
  const parts = [`Usage: ${usageLine(command)}`, '', command.summary];
  if (command.description) parts.push('', command.description);
  if (Object.keys(command.options).length > 0) parts.push('', 'Options:', ...optionLines(command.options));
  parts.push('', 'Global options:', ...optionLines(GLOBAL_OPTIONS));
  if (command.examples?.length) parts.push('', 'Examples:', ...command.examples.map((e) => `  ${e}`));
  return `${parts.join('\n')}\n`;
}

export function overviewHelp(commands: readonly CommandDef<unknown>[], group?: string): string {
  const shown = group ? commands.filter((c) => c.path[0] === group) : commands;
  const usages = shown.map((c) => [usageLine(c).replace(/^orrery /, ''), c.summary] as const);
  const width = Math.max(...usages.map(([usage]) => usage.length));
  const parts = [
    group ? `Usage: orrery ${group} <command> [options]` : 'Usage: orrery <command> [options]',
    '',
    group ? `Commands of ${group}:` : 'Commands:',
    ...usages.map(([usage, summary]) => `  ${usage.padEnd(width)}  ${summary}`),
    '',
    'Global options:',
    ...optionLines(
      group ? GLOBAL_OPTIONS : { ...GLOBAL_OPTIONS, version: { type: 'boolean', description: 'print the version' } },
    ),
    '',
    `Run 'orrery ${group ? `${group} ` : ''}<command> --help' for the options of a command.`,
  ];
  if (!group) {
    parts.push(
      '',
      'Exit codes: 0 ok; 1 API or network error; 2 usage or configuration error;',
      '            3 the job ended failed, cancelled or expired (watch); 4 timed out (watch --timeout).',
    );
  }
  return `${parts.join('\n')}\n`;
}
