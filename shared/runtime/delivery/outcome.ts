import type { SQSRecord } from 'aws-lambda';
import { MAX_VISIBILITY_DELAY_MS, retryDelayMs } from '../../core/backoff';
import { resolveBlob } from '../../core/blobs';
import type { InvokeStart } from '../../core/invoke';
import {
  type AttemptError,
  appendError,
  describeError,
  type Job,
  type SkipReason,
  type WakeWait,
} from '../../core/job';
import { JOURNAL_RETENTION_DAYS } from '../../core/journal';
import { jsonBytes, MAX_RESULT_BYTES } from '../../core/limits';
import { METRIC } from '../../core/metrics';
import { retryScheduleName, wakeScheduleName } from '../../core/ports';
import { JobTimeoutError, NondeterminismError, PermanentError } from '../../errors';
import { errorFields, type Logger } from '../../logger';
import { persist } from '../attempt-support';
import { ON_FAILURE_TIMEOUT_MS } from '../job-definition';
import { backIfSignalled, deferMessage } from './defer';
import { awaitInvoked } from './invoke-wait';
import type { WorkerKit } from './kit';

/** The claimed attempt an outcome is recorded for: its job, its message, its writer (the claim's owner) and its log. */
export interface AttemptAt {
  job: Job;
  record: SQSRecord;
  writer: string;
  log: Logger;
}

/** How a claimed attempt's handler ended, as the worker records it. */
export type AttemptResult = { ok: true; result: unknown } | { ok: false; error: unknown };

/**
 * Why a handler's result cannot be stored, or undefined when it can: under `limit` (the inline
 * limit, or the offloaded one when the worker has a payload bucket).
 */
export function resultProblem(result: unknown, limit = MAX_RESULT_BYTES): string | undefined {
  let size: number;
  try {
    size = jsonBytes(result ?? null);
  } catch (error) {
    return `result is not JSON-serialisable: ${error instanceof Error ? error.message : String(error)}`;
  }
  return size > limit ? `result is ${size} bytes of JSON; the limit is ${limit}` : undefined;
}

/** Records `failed` as `writer` (the owner this delivery claimed with, or tried to); then runs onFailure. */
export async function finalFailure(
  kit: WorkerKit,
  job: Job,
  errors: AttemptError[],
  writer: string,
  log: Logger,
): Promise<void> {
  const now = kit.clock.now();
  await persist(
    () => kit.deps.store.fail({ job, now, errors, expiresAt: kit.expiresAt(now), writer, ...kit.spent() }),
    log,
    'recording the failure',
  );
  kit.metrics.add(METRIC.failed, kit.type);
  log.error('job failed', { attempts: job.attempts, lastError: errors.at(-1)?.message });
  const onFailure = kit.def.onFailure;
  // its children's release after its hook, which runs once (a failed release keeps the message)
  // the hook gets the payload as the handler did: an offloaded one read back (one S3 GET; a
  // missing object is logged as the hook's error, and the hook is not called with a reference)
  if (onFailure)
    await runOnFailure(async () => {
      const payload = await resolveBlob(kit.deps.blobs, job.payload);
      await onFailure(payload, { jobId: job.id, type: job.type, attempts: job.attempts, errors });
    }, log);
  await kit.releaseAfterEnd(job.id, log);
}

/**
 * Holds the job for an operator (`held`): its replay diverged from its journal. The same one
 * write a {@link finalFailure} makes (`fail` with `hold`), with the error, retained as long as
 * its journal ({@link JOURNAL_RETENTION_DAYS}, or the platform's retention when longer); but the job has not ended, so no onFailure runs and its dependants are not released
 * (an operator's retry or rerun runs it again; a cancel releases them). Its slots are given back
 * after the attempt, as for any attempt that ends.
 */
export async function holdForOperator(
  kit: WorkerKit,
  job: Job,
  errors: AttemptError[],
  writer: string,
  log: Logger,
): Promise<void> {
  const now = kit.clock.now();
  // Kept as long as its journal (and its graph items) live, not a finished job's retention: its
  // dependants and an invoking parent wait for the operator's choice, and a job gone with its
  // retention could never be retried or cancelled to release them.
  const expiresAt = Math.max(kit.expiresAt(now), Math.floor(now / 1000) + JOURNAL_RETENTION_DAYS * 86_400);
  const hold = { job, now, errors, expiresAt, writer, hold: true };
  await persist(() => kit.deps.store.fail({ ...hold, ...kit.spent() }), log, 'recording the hold');
  kit.metrics.add(METRIC.held, kit.type);
  log.error('job held', {
    attempts: job.attempts,
    reason: 'nondeterministic',
    lastError: errors.at(-1)?.message,
    next: 'an operator retries it after a fix, reruns it from a step, or cancels it',
  });
}

/** Runs an onFailure hook for up to {@link ON_FAILURE_TIMEOUT_MS}; its errors are logged, never retried. */
async function runOnFailure(call: () => Promise<void>, log: Logger): Promise<void> {
  // Through a promise, so a hook that throws synchronously is caught like one that rejects.
  const hook = Promise.resolve().then(call);
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`onFailure exceeded ${ON_FAILURE_TIMEOUT_MS} ms`)),
      ON_FAILURE_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([hook, limit]);
  } catch (error) {
    log.error('onFailure hook failed; not retried', errorFields(error));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Gives a claimed attempt back before its handler ran (no slot, or a throttle turn later): the
 * job is due again at `runAt`, with no error of its own and the attempt refunded.
 */
export async function giveBack(
  kit: WorkerKit,
  job: Job,
  runAt: number,
  writer: string,
  log: Logger,
  what: string,
): Promise<void> {
  const now = kit.clock.now();
  const retry = { job, now, runAt, errors: [], expiresAt: kit.expiresAt(runAt), writer, refund: true };
  await persist(() => kit.deps.store.retry({ ...retry, ...kit.spent() }), log, what);
}

/** Ends a job that never runs (`skipped`); false when the job changed first and nothing was written. */
export async function recordSkip(
  kit: WorkerKit,
  input: { job: Job; reason: SkipReason; beforeSeq?: number },
  log: Logger,
): Promise<boolean> {
  const now = kit.clock.now();
  const skip = { ...input, now, expiresAt: kit.expiresAt(now) };
  return await persist(() => kit.deps.store.skip?.(skip) ?? Promise.resolve(false), log, 'recording the skip');
}

/**
 * Ends the attempt to wait (a sleep, or a signal's wait): the job is `waiting`, its attempt
 * given back, due at the wait's end. A signal that arrived meanwhile (sent while the handler
 * looked at its inbox, before this write) makes it due at once: whichever of the sender and this
 * worker writes last sees the other's write.
 */
export async function suspend(
  kit: WorkerKit,
  at: AttemptAt,
  wait: WakeWait,
  invoked: readonly InvokeStart[] = [],
): Promise<'done' | 'retry'> {
  const { job, record, writer, log } = at;
  const now = kit.clock.now();
  if (wait.kind === 'invoke') return await awaitInvoked(kit, at, wait, invoked, now);
  const runAt = Date.parse(wait.until);
  await persist(
    () => kit.deps.store.suspend({ job, now, runAt, waitingFor: wait, writer, ...kit.spent() }),
    log,
    `recording the ${wait.kind} wait`,
  );
  kit.metrics.add(METRIC.suspended, kit.type);
  log.info(wait.kind === 'sleep' ? 'job sleeps' : 'job waits for a signal', { name: wait.key, until: wait.until });
  if (wait.kind === 'signal' && (await backIfSignalled(kit, job, wait.key, record, log))) return 'retry';
  const viaScheduler = runAt - now > MAX_VISIBILITY_DELAY_MS && kit.deps.scheduler !== undefined;
  const scheduleName = viaScheduler ? wakeScheduleName(job.id, (job.resumes ?? 0) + 1) : undefined;
  return await deferMessage(kit, { job, runAt, now, scheduleName, record, log, what: `${wait.kind} wait` });
}

/** Records a success, and releases the job's children. */
export async function recordSuccess(
  kit: WorkerKit,
  at: Omit<AttemptAt, 'record'>,
  result: unknown,
): Promise<'done' | 'retry'> {
  const { job, writer, log } = at;
  const now = kit.clock.now();
  const written = await persist(
    () => kit.deps.store.succeed({ job, now, result, expiresAt: kit.expiresAt(now), writer, ...kit.spent() }),
    log,
    'recording success',
  );
  kit.metrics.add(METRIC.succeeded, kit.type);
  log.info('job succeeded', { durationMs: now - Date.parse(job.startedAt ?? job.updatedAt) });
  // the write says whether it has children (a store that does not say: the release reads it)
  const children = written ? written.childCount > 0 : true;
  const release = kit.release;
  if (release && children && !(await release.afterEnd(job.id, log))) return 'retry';
  if (!release && written && written.childCount > 0) {
    log.error('job has children but this worker has no job graph (WorkerDeps.graph): they are not released', {
      children: written.childCount,
    });
  }
  return 'done';
}

/**
 * Records a failed attempt: the job is held for an operator (a replay that diverged from its
 * journal), fails for good (a permanent error, no attempt left), or is retried after its backoff.
 */
export async function recordFailure(kit: WorkerKit, at: AttemptAt, error: unknown): Promise<'done' | 'retry'> {
  const { job, record, writer, log } = at;
  const now = kit.clock.now();
  const reason =
    error instanceof JobTimeoutError ? 'timeout' : error instanceof NondeterminismError ? error.code : 'error';
  const errors = appendError(job.errors, describeError(error, job.attempts, now, reason));
  if (error instanceof NondeterminismError) {
    await holdForOperator(kit, job, errors, writer, log);
    return 'done';
  }
  if (error instanceof PermanentError || job.attempts >= job.maxAttempts) {
    await finalFailure(kit, job, errors, writer, log);
    return 'done';
  }
  let delay = retryDelayMs(job.backoff ?? kit.def.spec.retry.backoff, job.attempts, kit.random);
  const viaScheduler = delay > MAX_VISIBILITY_DELAY_MS && kit.deps.scheduler !== undefined;
  if (delay > MAX_VISIBILITY_DELAY_MS && !viaScheduler) {
    log.warn('retry delay exceeds what a message can carry (11 h 40 min) and no scheduler is configured; capping it', {
      delayMs: delay,
    });
    delay = MAX_VISIBILITY_DELAY_MS;
  }
  const runAt = now + delay;
  // the attempt's stored error is kept for the retention after the retry is due
  const retry = { job, now, runAt, errors, expiresAt: kit.expiresAt(runAt), writer };
  await persist(() => kit.deps.store.retry({ ...retry, ...kit.spent() }), log, 'recording the retry');
  kit.metrics.add(METRIC.retried, kit.type);
  log.warn('attempt failed; will retry', { reason, delayMs: delay, viaScheduler, ...errorFields(error) });
  const scheduleName = viaScheduler ? retryScheduleName(job.id, job.attempts) : undefined;
  return await deferMessage(kit, { job, runAt, now, scheduleName, record, log, what: 'retry' });
}
