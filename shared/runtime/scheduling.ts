/**
 * Worker steps for timed jobs, kept out of the worker's main path: a far-future job whose
 * schedule fired early waits out the rest on its message's visibility; a job past its
 * `dispatchBy` ends `expired`; a `queue-one` schedule run waits for the run before it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSRecord } from 'aws-lambda';
import { MAX_VISIBILITY_DELAY_MS } from '../core/backoff';
import type { Job } from '../core/job';
import { claimableInMs } from '../core/lease';
import type { JobQueue, JobStore } from '../core/ports';
import { EARLY_START_TOLERANCE_MS, earlyByMs } from '../core/scheduling';
import { isSettled } from '../core/states';
import { errorFields, type Logger } from '../logger';

/** Longest a received message can be hidden (see MAX_VISIBILITY_DELAY_MS). */
const MAX_VISIBILITY_SECONDS = MAX_VISIBILITY_DELAY_MS / 1000;

/**
 * A message arrived before its job may start: the job is not due yet (a far-future job's
 * schedule fires a minute early; a duplicate, a capped SQS delay or a schedule left behind
 * arrive early), or an earlier attempt's lease may still be held (cancelled, then retried).
 * Hide the message for the remaining whole seconds (rounded down; at most 11 h 40 min, after
 * which it bounces again) and report it as a batch item failure, so SQS delivers it again less
 * than a second before the job may start; the claim then accepts it and {@link holdUntilRunAt}
 * waits out the rest. Costs one extra receive per bounce; the state is unchanged.
 */
export async function waitUntilDue(input: {
  job: Job;
  now: number;
  queue: JobQueue;
  queueUrl: string;
  record: SQSRecord;
  log: Logger;
  /** Hide at least until then (epoch ms), e.g. the running attempt's hard deadline. */
  notBefore?: number;
}): Promise<'retry'> {
  // Until runAt: whole seconds rounded down (the claim accepts 1 s early and the worker waits out
  // the rest). Until a lease fence or a deadline: rounded up (nothing is accepted early there).
  const waitMs = Math.max(claimableInMs(input.job, input.now), (input.notBefore ?? 0) - input.now);
  const round = earlyByMs(input.job, input.now) >= waitMs ? Math.floor : Math.ceil;
  const seconds = Math.min(MAX_VISIBILITY_SECONDS, Math.max(1, round(waitMs / 1000)));
  await input.queue.changeVisibility(input.queueUrl, input.record.receiptHandle, seconds).catch((error: unknown) => {
    input.log.warn('could not delay the early message; it returns after the visibility timeout', errorFields(error));
  });
  input.log.info('job may not start yet; its message returns when it may', {
    runAt: input.job.runAt,
    state: input.job.state,
    waitSeconds: seconds,
  });
  return 'retry';
}

/**
 * Hides a message until its job may go on (`until`: when it is due, or a gate's next chance: a
 * throttle's turn), without reading or writing the job: whole seconds rounded down, as for runAt
 * (the claim accepts 1 s early).
 */
export async function hideUntil(input: {
  until: number;
  now: number;
  queue: JobQueue;
  queueUrl: string;
  record: SQSRecord;
  log: Logger;
}): Promise<'retry'> {
  const seconds = Math.min(MAX_VISIBILITY_SECONDS, Math.max(1, Math.floor((input.until - input.now) / 1000)));
  await input.queue.changeVisibility(input.queueUrl, input.record.receiptHandle, seconds).catch((error: unknown) => {
    input.log.warn('could not delay the early message; it returns after the visibility timeout', errorFields(error));
  });
  // a job not due yet, or a gate's wait (a throttle's next turn, say): not only an early message
  input.log.info('message hidden until its job may go on', { waitSeconds: seconds });
  return 'retry';
}

/**
 * The claim accepts a job up to {@link EARLY_START_TOLERANCE_MS} before its runAt (the message
 * comes back from its last whole-second wait): the attempt waits out that fraction of a second
 * here, so the handler never starts before runAt.
 */
export async function holdUntilRunAt(job: Job, now: () => number): Promise<void> {
  const runAt = Date.parse(job.runAt);
  const wait = runAt - now();
  if (wait <= 0 || wait > EARLY_START_TOLERANCE_MS) return;
  await sleep(wait);
  // A timer may fire a millisecond or two before the clock says it is due: wait out the rest.
  const rest = runAt - now();
  if (rest > 0 && rest <= TIMER_SLACK_MS) await sleep(rest + 1);
}

/** How early a timer may fire by the clock (timers and the clock round differently). */
const TIMER_SLACK_MS = 2;

/** Records `expired` for a job that was not started by its `dispatchBy`; it never runs. */
export async function expireJob(input: {
  job: Job;
  now: number;
  expiresAt: number;
  store: JobStore;
  log: Logger;
}): Promise<'done'> {
  const { job, log } = input;
  if (!input.store.expire) {
    log.error('the job store cannot record expired jobs; the job is left as it is', { dispatchBy: job.dispatchBy });
    return 'done';
  }
  const expired = await input.store.expire({ job, now: input.now, expiresAt: input.expiresAt });
  if (expired) log.warn('job expired: not started before its dispatchBy', { dispatchBy: job.dispatchBy });
  else log.info('job changed before it could be expired; nothing to do');
  return 'done';
}

/** Seconds a waiting `queue-one` run hides before looking again: 5, 10, 20, … up to 5 minutes. */
export function predecessorWaitSeconds(receiveCount: number): number {
  return Math.min(300, 5 * 2 ** Math.max(0, Math.min(receiveCount - 1, 10)));
}

/**
 * A `queue-one` schedule run waits while the run it follows (`after`) is not finished: hide the
 * message for a while (growing with the receive count) and look again. True when it must wait.
 */
export async function mustWaitFor(input: {
  after: string;
  store: JobStore;
  queue: JobQueue;
  queueUrl: string;
  record: SQSRecord;
  log: Logger;
}): Promise<boolean> {
  const predecessor = await input.store.get(input.after);
  // a held run (its replay diverged) holds no lease and waits for an operator: the next one goes
  if (!predecessor || isSettled(predecessor.state)) return false;
  const receiveCount = Number(input.record.attributes?.ApproximateReceiveCount ?? '1');
  const seconds = predecessorWaitSeconds(receiveCount);
  await input.queue.changeVisibility(input.queueUrl, input.record.receiptHandle, seconds).catch((error: unknown) => {
    input.log.warn('could not delay the waiting run; it returns after the visibility timeout', errorFields(error));
  });
  input.log.info('run waits for the previous run of its schedule', {
    after: input.after,
    afterState: predecessor.state,
    waitSeconds: seconds,
  });
  return true;
}
