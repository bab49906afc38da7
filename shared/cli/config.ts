/**
 * Where the CLI finds the API: `--url`, else `ORRERY_URL`, else the `ApiUrl` output that
 * `npm run deploy` wrote to `.orrery/outputs.json` (looked up from the working directory
 * upwards).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

export const OUTPUTS_FILE = join('.orrery', 'outputs.json');

/** The CLI cannot find or read its configuration. Exit code 2, like a usage error. */
export class CliConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliConfigError';
  }
}

export interface ResolvedUrl {
  url: string;
  /** Where it came from, for `--help` and error messages. */
  source: string;
}

/** The nearest `.orrery/outputs.json` at or above `cwd`. */
export function findOutputsFile(cwd: string): string | undefined {
  let dir = cwd;
  for (;;) {
    const candidate = join(dir, OUTPUTS_FILE);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Reads `ApiUrl` from a `cdk deploy --outputs-file` JSON (`{ StackName: { ApiUrl, ... } }`). */
export function apiUrlFromOutputs(file: string, shownAs = file): string {
  let outputs: unknown;
  try {
    outputs = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new CliConfigError(`cannot read ${shownAs}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const stacks = Object.entries(typeof outputs === 'object' && outputs !== null ? outputs : {}).filter(
    ([, stack]) =>
      typeof stack === 'object' && stack !== null && typeof (stack as Record<string, unknown>).ApiUrl === 'string',
  ) as [string, { ApiUrl: string }][];
  const [first, ...others] = stacks;
  if (!first) throw new CliConfigError(`${shownAs} has no ApiUrl output; deploy with \`npm run deploy\` or pass --url`);
  if (others.length > 0) {
    throw new CliConfigError(
      `${shownAs} has an ApiUrl for several stacks (${stacks.map(([name]) => name).join(', ')}); pass --url or set ORRERY_URL`,
    );
  }
  return first[1].ApiUrl;
}

export function resolveApiUrl(input: {
  flag: string | undefined;
  env: Record<string, string | undefined>;
  cwd: string;
}): ResolvedUrl {
  if (input.flag) return { url: input.flag, source: '--url' };
  if (input.env.ORRERY_URL) return { url: input.env.ORRERY_URL, source: 'ORRERY_URL' };
  const file = findOutputsFile(input.cwd);
  if (file) {
    const shownAs = relative(input.cwd, file) || file;
    return { url: apiUrlFromOutputs(file, shownAs), source: shownAs };
  }
  throw new CliConfigError(
    [
      'no API URL. Give one of:',
      '  --url https://<id>.lambda-url.<region>.on.aws/',
      '  export ORRERY_URL=http://127.0.0.1:4600      (the local server of `npm run dev`)',
      `  npm run deploy                               (writes ${OUTPUTS_FILE} with the stack's ApiUrl)`,
    ].join('\n'),
  );
}
