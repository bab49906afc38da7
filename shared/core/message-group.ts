/**
 * SQS fair queues, domain side: the `MessageGroupId` a job's message carries, so that SQS can tell
 * its tenants apart. On a standard queue a group turns fair delivery on for that message, with no
 * queue setting and no change to the consumer: when one group has a large share of the messages
 * in flight (or of the consumers' time), SQS returns the other groups' messages first. See
 * docs/flow-control.md ("SQS fair queues") for when that helps and what is not verified.
 *
 * The group is the job's tenant as its flow control already names it: its first keyed concurrency
 * key (or fair key), else its singleton key, else its throttle key. Nothing is read or written to
 * find it.
 */
import { createHash } from 'node:crypto';
import { WHOLE_TYPE_KEY } from './flow';
import type { Job } from './job';

/** What SQS takes as a `MessageGroupId`: 1 to 128 characters of ASCII letters, digits and punctuation. */
export const MESSAGE_GROUP_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** The keys of a job that may name its group (each written at enqueue only for a type with that option). */
export type GroupedJob = Pick<Job, 'type'> & Partial<Pick<Job, 'flowKeys' | 'singletonKey' | 'throttleKey'>>;

/**
 * Only the keys of `job` that name its group, to hand on beside its id and type (a whole job
 * would also hand on its runAt and `after`).
 */
export function groupKeysOf(job: GroupedJob): Omit<GroupedJob, 'type'> {
  const { flowKeys, singletonKey, throttleKey } = job;
  return {
    ...(flowKeys === undefined ? {} : { flowKeys }),
    ...(singletonKey === undefined ? {} : { singletonKey }),
    ...(throttleKey === undefined ? {} : { throttleKey }),
  };
}

/** The key a job's group is named by: its first keyed concurrency key, else its singleton key, else its throttle key. */
function tenantKeyOf(job: GroupedJob): string | undefined {
  const keyed = (key: string | undefined) => (key === undefined || key === WHOLE_TYPE_KEY ? undefined : key);
  return job.flowKeys?.find((key) => key !== WHOLE_TYPE_KEY) ?? keyed(job.singletonKey) ?? keyed(job.throttleKey);
}

/**
 * The `MessageGroupId` of a job's message: `<type>:<key>` from the key that names its tenant (see
 * {@link tenantKeyOf}), or, when that is not a group SQS takes (over 128 characters, or a space
 * or a character outside ASCII: keys allow both), `<type>#` and the key's SHA-256 in base64url
 * (84 characters at most). A type name has neither `:` nor `#`, so the two forms never meet, and
 * two keys of one type never share a group (but by a SHA-256 collision). Undefined for a job
 * with no such key (its type has no keyed limit, or the job's keys are all the whole type's).
 *
 * Pure and deterministic: every hand-off of a job gives its messages the same group.
 *
 * @example
 * messageGroupOf({ type: 'tenant-sync', flowKeys: ['acme', '*'] }); // 'tenant-sync:acme'
 * messageGroupOf({ type: 'tenant-sync', flowKeys: ['Zürich AG'] }); // 'tenant-sync#<43 base64url characters>'
 * messageGroupOf({ type: 'echo' }); // undefined
 */
export function messageGroupOf(job: GroupedJob): string | undefined {
  const key = tenantKeyOf(job);
  if (key === undefined) return undefined;
  const plain = `${job.type}:${key}`;
  if (MESSAGE_GROUP_PATTERN.test(plain)) return plain;
  return `${job.type}#${createHash('sha256').update(key, 'utf8').digest('base64url')}`;
}

/** The options of a job type spec that decide whether its messages carry a group. */
export interface FairQueueSpec {
  readonly type: string;
  readonly sqsFairQueue?: boolean;
  readonly concurrency?: readonly { key?: unknown; fairBy?: unknown }[];
  readonly singleton?: object;
  readonly throttle?: { key?: unknown };
}

/**
 * Whether a job type's options can key a job: a keyed concurrency limit or one shared fairly (its
 * fair key), a singleton (whose key an enqueue may give even without a key function) or a keyed
 * throttle.
 */
function keyable(spec: FairQueueSpec): boolean {
  return (
    (spec.concurrency ?? []).some((limit) => limit.key !== undefined || limit.fairBy !== undefined) ||
    spec.singleton !== undefined ||
    spec.throttle?.key !== undefined
  );
}

/** Whether the messages of a job type carry a group: `sqsFairQueue`, by default true for a type that keys its jobs. */
export function usesFairQueue(spec: FairQueueSpec): boolean {
  return spec.sqsFairQueue ?? keyable(spec);
}

/**
 * The job types whose messages carry a group, of `specs` (the catalog a function knows): what
 * the hand-off's `fairQueues` is given.
 *
 * @example
 * handOffOf(config, queue, scheduler, fairQueueTypes(catalog));
 */
export function fairQueueTypes(specs: readonly FairQueueSpec[]): ReadonlySet<string> {
  return new Set(specs.filter(usesFairQueue).map((spec) => spec.type));
}

/** Checks a spec's `sqsFairQueue` when it is declared. Returns the message of the problem, if any. */
export function sqsFairQueueProblem(spec: FairQueueSpec): string | undefined {
  const value: unknown = spec.sqsFairQueue;
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') return 'sqsFairQueue must be true or false';
  if (value && !keyable(spec)) {
    return 'sqsFairQueue needs a key to name the group by: a keyed or fair concurrency limit, a singleton or a keyed throttle';
  }
  return undefined;
}
