import type { z } from 'zod';
import { type FieldIssue, ValidationError } from '../errors';
import { safeParse } from './zod-mini';

/** Turns zod issues into `{ path, message }` pairs with dotted paths under `prefix`. */
export function toFieldIssues(error: z.core.$ZodError, prefix?: string): FieldIssue[] {
  const pathOf = (segments: PropertyKey[]) =>
    [...(prefix ? [prefix] : []), ...segments.map(String)].join('.') || '(root)';
  return error.issues.flatMap((issue) => {
    // Name each unexpected field rather than its parent object.
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: pathOf([...issue.path, key]), message: 'is not an allowed field' }));
    }
    return [{ path: pathOf(issue.path), message: issue.message }];
  });
}

/**
 * The validation boundary: parses `value` with `schema` (full zod or zod/mini) or throws a
 * {@link ValidationError} naming every offending field.
 */
export function parseOrThrow<S extends z.core.$ZodType>(
  schema: S,
  value: unknown,
  options: { message: string; code?: string; prefix?: string },
): z.output<S> {
  const result = safeParse(schema, value);
  if (!result.success) {
    throw new ValidationError(options.message, toFieldIssues(result.error, options.prefix), options.code);
  }
  return result.data;
}
