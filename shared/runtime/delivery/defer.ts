import type { SQSRecord } from 'aws-lambda';
import { MAX_VISIBILITY_DELAY_MS } from '../../core/backoff';
import { type Job, jobMessage } from '../../core/job';
import { SQS_MAX_DELAY_SECONDS } from '../../core/limits';
import { incarnationOf } from '../../core/table';
import { errorFields, type Logger } from '../../logger';
import { persist } from '../attempt-support';
import type { Outcome } from '../gates/gate';
import type { WorkerKit } from './kit';

/** A signal wait whose inbox could not be read after its suspend looks again this soon. */
const SIGNAL_LOOK_AGAIN_SECONDS = 10;

/**
 * Brings the job's message back at `runAt`: through a one-time schedule (`scheduleName`) when
 * one is given, else on this message's visibility (at most 11 h 40 min; a message back early is
 * hidden again), else, when that fails (the message may be gone), as a new message.
 */
export async function deferMessage(
  kit: WorkerKit,
  input: {
    job: Job;
    runAt: number;
    now: number;
    scheduleName: string | undefined;
    record: SQSRecord;
    log: Logger;
    what: string;
  },
): Promise<Outcome> {
  const { job, runAt, now, record, log, what } = input;
  const { queue, scheduler } = kit.deps;
  const { route } = kit;
  const delay = Math.max(0, runAt - now);
  if (input.scheduleName !== undefined && scheduler) {
    // The schedule sends a fresh message at runAt; this one is done.
    const message = jobMessage({ id: job.id, type: job.type }, { notBefore: runAt });
    const name = input.scheduleName;
    try {
      await persist(
        () => scheduler.scheduleJob({ name, fireAt: runAt, queueArn: route.queueArn, message }),
        log,
        `scheduling the ${what}`,
      );
      return 'done';
    } catch (error) {
      // Keep this message instead, hidden as long as SQS allows: when it comes back early, the
      // claim refuses the job (not due) and hides it again; the supervisor covers a lost one.
      log.warn(`could not schedule the ${what}; the message waits for it instead`, errorFields(error));
    }
  }
  try {
    await queue.changeVisibility(route.queueUrl, record.receiptHandle, Math.min(delay, MAX_VISIBILITY_DELAY_MS) / 1000);
    return 'retry';
  } catch (error) {
    // Our message may be gone (a duplicate delivery of it was deleted) or the call failed:
    // send a fresh one carrying the delay, so the job cannot be lost. A spare copy is harmless.
    log.warn(`could not set the ${what} delay on the message; sending a new one`, errorFields(error));
    const message = jobMessage({ id: job.id, type: job.type });
    // SQS delays at most 15 min: a message that arrives before the job is due is hidden again.
    await persist(
      () => queue.send(route.queueUrl, message, Math.min(SQS_MAX_DELAY_SECONDS, Math.ceil(delay / 1000))),
      log,
      `sending the ${what} message`,
    );
    return 'done';
  }
}

/**
 * For a job that waits for `signal`: if the signal is in its inbox, makes the job due now and
 * brings this message back at once; if that cannot be told (the read or the write failed),
 * brings it back in {@link SIGNAL_LOOK_AGAIN_SECONDS}, when its claim, refused as early, looks
 * again. True when the message comes back so (the caller answers `retry`); false when no signal
 * is there.
 */
export async function backIfSignalled(
  kit: WorkerKit,
  job: Job,
  signal: string,
  record: SQSRecord,
  log: Logger,
): Promise<boolean> {
  const { journal, store, queue } = kit.deps;
  if (!journal) return false;
  const id = job.id;
  let seconds = SIGNAL_LOOK_AGAIN_SECONDS;
  try {
    const inbox = { jobId: id, incarnation: incarnationOf(job.createdAt), name: signal };
    if (!(await journal.signal(inbox))) return false;
    if (await store.wake({ id, signal, now: kit.clock.now() })) {
      log.info('its signal had arrived: resuming now', { name: signal });
      seconds = 0;
    }
  } catch (error) {
    log.warn('could not look for the signal the job waits for; looking again soon', errorFields(error));
  }
  await queue
    .changeVisibility(kit.route.queueUrl, record.receiptHandle, seconds)
    .catch((error: unknown) => log.warn('could not bring the message back soon', errorFields(error)));
  return true;
}
