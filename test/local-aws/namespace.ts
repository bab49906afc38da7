import { randomBytes } from 'node:crypto';

/** Longest label kept in a prefix; the rest of the prefix is `-` plus 8 random characters. */
const MAX_LABEL = 14;

/**
 * A short, unique resource-name prefix for one test file or dev session, so several test
 * files can share one DynamoDB Local (and run in parallel) without seeing each other's
 * tables, queues or schedule groups.
 *
 * The result matches `^[a-z][a-z0-9-]{0,23}$`: at most 23 characters, so
 * `${prefix}-${type}-dlq` stays within SQS's 80-character queue-name limit for any job type
 * allowed by `JOB_TYPE_PATTERN` (≤ 40 characters), `${prefix}-jobs` fits a Scheduler group
 * name (≤ 64) and a DynamoDB table name (≤ 255).
 *
 * @param label - Something human-readable (test file, developer name); non-alphanumerics
 *   become `-`, and it is cut to 14 characters.
 *
 * @example
 * const prefix = uniquePrefix('enqueue');   // e.g. 'enqueue-k3v9x0qa'
 * await deployLocal(aws, { prefix, jobTypes: [{ type: 'send-email', timeoutMs: 10_000 }] });
 */
export function uniquePrefix(label: string): string {
  let clean = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_LABEL)
    .replace(/-+$/, '');
  if (!/^[a-z]/.test(clean)) clean = `t${clean}`.slice(0, MAX_LABEL);
  return `${clean}-${randomSuffix(8)}`;
}

function randomSuffix(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += alphabet[byte % alphabet.length];
  return out;
}
