/**
 * The slots a job takes (its singleton's, then its concurrency limits'), the rule that says a
 * holder may never give its place back, and the rule that lets a new job take its place at
 * enqueue. Pure: the worker's gate (shared/runtime/flow-gate.ts), the flow slots' adapters and
 * the enqueue (shared/api/enqueue/line.ts) apply them.
 */
import { ATTEMPT_MARGIN_MS } from './due';
import {
  type Holder,
  resolveFlowKeys,
  resolveSingletonKey,
  type Slot,
  singletonScope,
  slotsOf,
  WHOLE_TYPE_KEY,
} from './flow';
import type { Job, SlotWait } from './job';
import { type JobTypeSpec, MAX_TIMEOUT_MS } from './job-type';
import { lineRank } from './priority';

/**
 * A job handed a slot is expected to start within this long (its message is on its way). A
 * holder that is still waiting to start after it is sent its message again: the message that
 * should have started it may be lost.
 */
export const WAKE_GRACE_MS = 2 * 60_000;
/** Longer than any attempt holds a slot: the longest timeout, its margin, and the heartbeat's stop. */
const LONGEST_HOLD_MS = MAX_TIMEOUT_MS + ATTEMPT_MARGIN_MS + 60_000;

/**
 * The slots a job of `spec` takes, in order: its singleton's first (the only slots types share),
 * then its concurrency limits'. So every job takes slots in one global order, and no two jobs
 * wait on each other in a cycle. None for a type without flow control.
 */
export function jobSlots(
  spec: Pick<JobTypeSpec, 'type' | 'concurrency' | 'singleton'>,
  job: Pick<Job, 'flowKeys' | 'payload' | 'singletonKey'>,
): Slot[] {
  const out: Slot[] = [];
  const singleton = spec.singleton;
  if (singleton) {
    let key = job.singletonKey;
    if (key === undefined) {
      // A job written before its type had a singleton: its key from its payload, as at enqueue.
      try {
        key = resolveSingletonKey(singleton, job.payload);
      } catch {
        key = WHOLE_TYPE_KEY;
      }
    }
    out.push({ scope: singletonScope(spec.type, singleton), key, limit: 1, singleton: singleton.mode });
  }
  const limits = spec.concurrency;
  if (!limits || limits.length === 0) return out;
  let keys = job.flowKeys;
  if (!keys || keys.length !== limits.length) {
    try {
      keys = resolveFlowKeys(limits, job.payload);
    } catch {
      keys = limits.map(() => WHOLE_TYPE_KEY);
    }
  }
  return [...out, ...slotsOf(spec.type, limits, keys)];
}

/**
 * A holder that may never give its place back: handed it over {@link WAKE_GRACE_MS} ago and not
 * started, or holding it for longer than any attempt runs (it may be waiting on a later slot,
 * which a read tells). Any job in line that sees one looks, so a line whose head never comes
 * back (cancelled while it waited, or an orphaned ticket) still moves.
 */
export function holderSuspect(holder: Pick<Holder, 'token' | 'since'>, now: number): boolean {
  return holder.token === 0 ? holder.since < now - WAKE_GRACE_MS : holder.since < now - LONGEST_HOLD_MS;
}

/** Where a new job joins at enqueue: its first slot's ranked line, under its rank. */
export interface EnqueueLine {
  slot: Slot;
  rank: string;
}

/**
 * Whether a job just created takes its place at enqueue (shared/api/enqueue/line.ts: the
 * delivery's `FlowSlots.acquire`, for no attempt yet): it holds a free place before its message
 * is sent, or, when it has to wait, joins its line and is sent no message, instead of being sent
 * to its queue only to do either on its first delivery.
 * So a backlog waits in its line (ranked, and shared fairly), not in the queue ahead of everyone
 * else's messages and of the messages that start the jobs handed a place.
 *
 * Only where the slot's line is the first gate the job meets and it is due now: a type with a
 * ranked line (priorities, or a limit with `fairBy`), no singleton (its slot comes first and may
 * skip), no throttle and no debounce (their gates come before the slots), not a schedule's run
 * (a `queue-one` run waits for its predecessor first). Undefined otherwise: the job is sent.
 */
export function lineAtEnqueue(
  spec: Pick<JobTypeSpec, 'type' | 'concurrency' | 'singleton' | 'throttle' | 'debounce' | 'priority'>,
  job: Pick<Job, 'id' | 'state' | 'runAt' | 'priority' | 'flowKeys' | 'payload' | 'singletonKey' | 'schedule'>,
  now: number,
): EnqueueLine | undefined {
  if (spec.singleton || spec.throttle || spec.debounce || job.schedule !== undefined) return undefined;
  if (job.state !== 'queued' || Date.parse(job.runAt) > now) return undefined;
  const rank = lineRank(spec, job);
  const [slot] = jobSlots(spec, job);
  if (rank === undefined || !slot) return undefined;
  return { slot, rank };
}

/** The `waitingFor` of a job that joined its line at enqueue (its first slot, index 0). */
export function enqueueLineWait(line: EnqueueLine, now: number): SlotWait {
  return { kind: 'concurrency', limit: 0, key: line.slot.key, rank: line.rank, since: new Date(now).toISOString() };
}
