import type { SQSRecord } from 'aws-lambda';
import type { Job } from '../../core/job';
import { incarnationOf } from '../../core/table';
import { dispatch } from '../../dispatch/dispatch';
import { errorFields, type Logger } from '../../logger';
import { persist } from '../attempt-support';
import type { Outcome } from '../gates/gate';
import type { WorkerKit } from './kit';

/** A signal wait whose inbox could not be read after its suspend looks again this soon. */
const SIGNAL_LOOK_AGAIN_SECONDS = 10;

/**
 * Brings the job's message back at `runAt` through the one hand-off (shared/dispatch/dispatch.ts):
 * a one-time schedule (`scheduleName`) when one is given, else this message's visibility (at most
 * 11 h 40 min; a message back early is hidden again), else, when that fails (the message may be
 * gone), a new message. `'retry'` when this message comes back.
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
  return await dispatch(kit.handOff, job, now, {
    runAt,
    received: { queueUrl: kit.route.queueUrl, receiptHandle: record.receiptHandle },
    scheduleName: input.scheduleName,
    log,
    what,
    persist: (write, label) => persist(write, log, label),
  });
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
