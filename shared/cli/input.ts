/** Reading and checking option values; every problem is a {@link UsageError} (exit 2). */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { JOB_ID_PATTERN } from '../core/limits';
import { JOB_STATES, type JobState } from '../core/states';
import { type OptionValues, UsageError } from './args';
import type { CommandContext } from './context';

export function stringOption(options: OptionValues, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' ? value : undefined;
}

/** An integer option within bounds, or undefined when absent. */
export function intOption(
  options: OptionValues,
  name: string,
  command: string,
  bounds: { min?: number; max?: number } = {},
): number | undefined {
  const text = stringOption(options, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  const { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = bounds;
  if (!/^-?\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = bounds.min !== undefined ? ` from ${min}${bounds.max !== undefined ? ` to ${max}` : ''}` : '';
    throw new UsageError(`--${name} must be an integer${range}, got "${text}"`, command);
  }
  return value;
}

/** A date-time option (ISO 8601), kept as given when it parses. */
export function timeOption(options: OptionValues, name: string, command: string): string | undefined {
  const text = stringOption(options, name);
  if (text === undefined) return undefined;
  if (Number.isNaN(Date.parse(text))) {
    throw new UsageError(`--${name} must be an ISO 8601 date-time (2026-11-22T10:00:00Z), got "${text}"`, command);
  }
  return text;
}

/** Job ids separated by commas (`a,b,c`; spaces around them are ignored), or undefined when absent. */
export function jobIdsOption(options: OptionValues, name: string, command: string): string[] | undefined {
  const text = stringOption(options, name);
  if (text === undefined) return undefined;
  const ids = text.split(',').map((id) => id.trim());
  for (const id of ids) {
    if (!JOB_ID_PATTERN.test(id)) {
      throw new UsageError(
        `--${name}: "${id}" is not a job id (1-64 of A-Za-z0-9_.-, starting with a letter or digit; separate ids with commas)`,
        command,
      );
    }
  }
  return ids;
}

export function stateOption(options: OptionValues, name: string, command: string): JobState | undefined {
  const text = stringOption(options, name);
  if (text === undefined) return undefined;
  if (!(JOB_STATES as readonly string[]).includes(text)) {
    throw new UsageError(`--${name} must be one of ${JOB_STATES.join(', ')}; got "${text}"`, command);
  }
  return text as JobState;
}

/**
 * The payload from `--payload JSON` or `--payload-file FILE` (`-` reads stdin), or undefined
 * when neither is given. It must be a JSON object. `name` names the options (`data`: `--data`
 * and `--data-file`).
 */
export async function payloadOption(
  context: CommandContext,
  options: OptionValues,
  command: string,
  name = 'payload',
): Promise<Record<string, unknown> | undefined> {
  const inline = stringOption(options, name);
  const file = stringOption(options, `${name}-file`);
  if (inline !== undefined && file !== undefined) {
    throw new UsageError(`give --${name} or --${name}-file, not both`, command);
  }
  let text: string;
  let from: string;
  if (inline !== undefined) {
    text = inline;
    from = `--${name}`;
  } else if (file !== undefined) {
    from = file === '-' ? 'stdin' : file;
    try {
      text = file === '-' ? await context.readStdin() : readFileSync(resolve(context.cwd, file), 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read --${name}-file ${file}: ${(error as Error).message}`, command);
    }
  } else {
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${from} is not valid JSON: ${(error as Error).message}`, command);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`${from} must be a JSON object, like '{"to":"a@b.c"}'`, command);
  }
  return value as Record<string, unknown>;
}
