import { randomUUID } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import { blobKey, isBlobRef, MAX_BLOB_BYTES, offload, resolveBlob } from '../../core/blobs';
import { appendError, describeError, type Job, type WakeWait } from '../../core/job';
import { JOURNAL_RETENTION_DAYS } from '../../core/journal';
import { MAX_RESULT_BYTES } from '../../core/limits';
import { METRIC } from '../../core/metrics';
import { isTerminal } from '../../core/states';
import * as z from '../../core/zod-mini';
import { parentsReader } from '../../dispatch/release';
import { BlobMissingError, JobTimeoutError, LeaseLostError, PermanentError, ValidationError } from '../../errors';
import type { Logger } from '../../logger';
import { type ProgressReporter, progressReporter } from '../attempt-support';
import type { Outcome } from '../gates/gate';
import type { JobContext } from '../job-definition';
import { keepLease } from '../lease-keeper';
import { holdUntilRunAt, waitUntilDue } from '../scheduling';
import { untilAborted } from '../until-aborted';
import { createWorkflow, Suspension } from '../workflow';
import { invokerOf } from './invoke-wait';
import type { WorkerKit } from './kit';
import { type AttemptResult, finalFailure, recordFailure, recordSuccess, resultProblem, suspend } from './outcome';

/** One claimed attempt's machinery: its abort signal, lease keeper, progress and workflow. */
interface Running {
  readonly controller: AbortController;
  readonly keeper: ReturnType<typeof keepLease>;
  readonly progress: ProgressReporter;
  readonly workflow: ReturnType<typeof createWorkflow>;
  /** Rejects when a sleep or a wait ends the attempt. */
  readonly suspended: Promise<never>;
  leaseLost(): boolean;
}

/**
 * Runs a claimed attempt and records how it ended: the handler's result, its error (retried or
 * failed for good), or the wait it suspended on. A lost lease records nothing.
 */
export async function runAttempt(kit: WorkerKit, job: Job, record: SQSRecord, log: Logger): Promise<Outcome> {
  // The owner we claimed with: unique per claim, so it identifies our writes.
  const writer = job.leaseOwner ?? kit.owner;
  // zod's core parse: the job author's schema may be full zod or zod/mini.
  // An offloaded payload is read back first (one S3 GET): the handler sees the value, never its reference.
  const given = await payloadOf(kit, job, log);
  if (given.missing) {
    kit.noCall(record);
    const errors = appendError(
      job.errors,
      describeError(given.missing, job.attempts, kit.clock.now(), 'payload_missing'),
    );
    await finalFailure(kit, job, errors, writer, log);
    return 'done';
  }
  const parsed = z.safeParse(kit.def.spec.payload, given.value);
  if (!parsed.success) {
    kit.noCall(record);
    const err = new PermanentError(`payload no longer matches the ${kit.type} schema: ${parsed.error.message}`);
    const errors = appendError(job.errors, describeError(err, job.attempts, kit.clock.now(), 'invalid_payload'));
    await finalFailure(kit, job, errors, writer, log);
    return 'done';
  }
  const running = start(kit, job, record, log);
  let outcome: AttemptResult = { ok: false, error: new LeaseLostError(job.id, job.leaseToken) };
  let cancelTimeout = () => {};
  try {
    await holdUntilRunAt(job, () => kit.clock.now()); // claimed up to 1 s before its runAt
    if (running.keeper.check()) {
      const { timeoutMs } = kit.def.spec;
      cancelTimeout = kit.timer.after(timeoutMs, () => running.controller.abort(new JobTimeoutError(timeoutMs)));
      outcome = await execute(kit, running, job, parsed.data, record, log);
    } else kit.noCall(record);
  } finally {
    cancelTimeout();
    // A progress write still in flight lands before the attempt's end is written (while the
    // lease is still kept): one that landed after it would be refused, as if the lease were lost.
    await running.progress.stop(running.keeper.intervalMs);
    await running.keeper.stop();
  }
  if (running.leaseLost()) return await afterLeaseLost(kit, job, record, log);
  // A wait that ended the attempt makes the job wait, whatever the handler did; a misuse (or a divergent replay) fails it.
  const misuse = running.workflow.misuse(outcome.ok);
  if (misuse) outcome = { ok: false, error: misuse };
  const wait = misuse ? undefined : running.workflow.suspended();
  const at = { job, record, writer, log };
  if (wait) return await suspend(kit, at, wait, running.workflow.invoked());
  if (outcome.ok) {
    const problem = resultProblem(outcome.result, kit.deps.blobs ? MAX_BLOB_BYTES : MAX_RESULT_BYTES);
    if (problem) outcome = { ok: false, error: new PermanentError(problem) };
    else outcome = await offloadResult(kit, job, outcome.result);
  }
  return outcome.ok ? await recordSuccess(kit, at, outcome.result) : await recordFailure(kit, at, outcome.error);
}

/**
 * The job's payload as the handler gets it: an offloaded one read back from the payload bucket.
 * An object that is gone (or no bucket to read it from) is `missing`: the job cannot run. Any
 * other error (S3 throttled or down) is thrown, and the message comes back.
 */
async function payloadOf(
  kit: WorkerKit,
  job: Job,
  log: Logger,
): Promise<{ value: unknown; missing?: undefined } | { missing: BlobMissingError }> {
  if (!isBlobRef(job.payload)) return { value: job.payload };
  try {
    return { value: await resolveBlob(kit.deps.blobs, job.payload) };
  } catch (error) {
    if (error instanceof BlobMissingError) {
      log.error("the job's offloaded payload cannot be read", { key: error.key });
      return { missing: error };
    }
    throw error;
  }
}

/**
 * A result over the inline limit goes to the payload bucket (one S3 PUT) and the job keeps its
 * reference; one that fits is kept as it is (no request). A PUT that fails fails the attempt,
 * which is retried as any other failure.
 */
async function offloadResult(kit: WorkerKit, job: Job, result: unknown): Promise<AttemptResult> {
  try {
    return {
      ok: true,
      result: await offload(kit.deps.blobs, result, {
        inlineLimit: MAX_RESULT_BYTES,
        key: () => blobKey('result', job.id, `${job.attempts}-${randomUUID()}`),
        what: 'result',
      }),
    };
  } catch (error) {
    return { ok: false, error: error instanceof ValidationError ? new PermanentError(error.message) : error };
  }
}

/** The parents' results as values: an offloaded one read back (one S3 GET each), the others as they are. */
async function withResolvedResults<T extends { result: unknown }>(
  kit: WorkerKit,
  reading: Promise<Record<string, T>>,
): Promise<Record<string, T>> {
  const parents = await reading;
  const entries = await Promise.all(
    Object.entries(parents).map(
      async ([id, parent]) => [id, { ...parent, result: await resolveBlob(kit.deps.blobs, parent.result) }] as const,
    ),
  );
  return Object.fromEntries(entries);
}

/** Sets up a claimed attempt: from here on, a lease that cannot be renewed aborts the handler. */
function start(kit: WorkerKit, job: Job, record: SQSRecord, log: Logger): Running {
  const { store, queue, journal } = kit.deps;
  const controller = new AbortController();
  let lost = false;
  const loseLease = (error: LeaseLostError) => {
    if (lost) return;
    lost = true;
    controller.abort(error);
    log.warn('lease lost; aborting handler', { token: job.leaseToken });
  };
  // If the lease cannot be renewed, the handler is stopped at least one heartbeat interval before
  // it runs out, so another worker's takeover never overlaps it.
  const keeper = keepLease({
    job,
    store,
    queue,
    queueUrl: kit.route.queueUrl,
    receiptHandle: record.receiptHandle,
    clock: kit.clock,
    leaseMs: kit.leaseMs,
    log,
    onLost: loseLease,
  });
  const progress = progressReporter({ job, store, clock: kit.clock, log, onLeaseLost: loseLease });
  // Rejects when a sleep or a wait ends the attempt: the worker stops waiting for the handler
  // then, as at a timeout (a handler that catches the Suspension and goes on cannot hold it).
  let onSuspend: (wait: WakeWait) => void = () => {};
  const suspended = new Promise<never>((_, reject) => {
    onSuspend = (wait) => reject(new Suspension(wait));
  });
  suspended.catch(() => {}); // the race may leave it rejected later; nobody else awaits it
  const invoker = invokerOf(kit, job);
  const workflow = createWorkflow({
    job,
    ...(kit.deps.blobs ? { blobs: kit.deps.blobs } : {}),
    ...(journal ? { journal } : {}),
    ...(kit.deps.eventWaits ? { eventWaits: kit.deps.eventWaits } : {}),
    ...(kit.deps.events ? { events: kit.deps.events } : {}),
    ...(invoker ? { invoker } : {}),
    clock: kit.clock,
    signal: controller.signal,
    expiresAt: (now) => Math.floor(now / 1000) + JOURNAL_RETENTION_DAYS * 86_400,
    onSuspend: (wait) => onSuspend(wait),
    version: kit.version,
  });
  return { controller, keeper, progress, workflow, suspended, leaseLost: () => lost };
}

/** Runs the handler until it returns, throws, is aborted (timeout, lost lease) or suspends; then lets what it left running stop. */
async function execute(
  kit: WorkerKit,
  running: Running,
  job: Job,
  payload: unknown,
  record: SQSRecord,
  log: Logger,
): Promise<AttemptResult> {
  const { controller, keeper, workflow } = running;
  const aborted = new Promise<never>((_, reject) => {
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
  });
  aborted.catch(() => {}); // the race may leave it rejected later; nobody else awaits it
  const readParents = parentsReader(kit.deps.graph, job);
  const ctx: JobContext = {
    jobId: job.id,
    type: job.type,
    attempt: job.attempts,
    maxAttempts: job.maxAttempts,
    scheduledAt: job.runAt,
    signal: controller.signal,
    log,
    progress: running.progress.report,
    parents: () => untilAborted(withResolvedResults(kit, readParents()), controller.signal),
    step: workflow.step,
    sleep: workflow.sleep,
    waitForSignal: workflow.waitForSignal,
    emit: workflow.emit,
    waitForEvent: workflow.waitForEvent,
    invoke: workflow.invoke,
    patched: workflow.patched,
  };
  // Through a promise, so a handler that throws synchronously is caught like one that rejects.
  const runStart = kit.clock.now();
  const handler = Promise.resolve().then(() => kit.call(payload, ctx, record));
  let outcome: AttemptResult;
  try {
    outcome = { ok: true, result: await Promise.race([handler, aborted, running.suspended]) };
  } catch (error) {
    outcome = { ok: false, error };
  }
  kit.metrics.add(METRIC.runDuration, kit.type, kit.clock.now() - runStart);
  await stopBeside(running, handler, log);
  // Steps or waits the handler did not wait for (a Promise.all that rejected early) end, or
  // are stopped, while the lease is still kept: none outlives the attempt.
  if (!(await workflow.settle(keeper.intervalMs))) {
    if (!controller.signal.aborted) controller.abort(new Error('the handler ended while a step was still running'));
    if (!(await workflow.settle(keeper.intervalMs))) {
      log.warn('a step still ran a heartbeat interval after its abort signal; pass ctx.signal on', {
        waitedMs: keeper.intervalMs,
      });
    }
  }
  return outcome;
}

/**
 * An aborted attempt (timeout, lost lease) gets its heartbeat interval to stop, while the lease
 * is still kept, before anything is recorded or the message comes back, so the next attempt never
 * starts beside it (nor a frozen Lambda resumes it later). A suspended one (a sleep or a wait
 * ended it) ends the same way, before the job is written waiting and its slots are given back:
 * the calls it left running get their interval first (a step that finishes is recorded; a second
 * wait joins the first), then ctx.signal aborts with the Suspension as its reason, so work beside
 * the wait that the handler no longer awaits (the rest of a rejected Promise.all) stops too.
 */
async function stopBeside(running: Running, handler: Promise<unknown>, log: Logger): Promise<void> {
  const { controller, keeper, workflow } = running;
  if (controller.signal.aborted) {
    await handlerStopped(handler, keeper.intervalMs, log, controller.signal.reason);
    return;
  }
  const wait = workflow.suspended();
  if (!wait) return;
  await workflow.settle(keeper.intervalMs);
  controller.abort(new Suspension(workflow.suspended() ?? wait));
  await handlerStopped(handler, keeper.intervalMs, log, controller.signal.reason);
}

/**
 * Waits up to `withinMs` for an aborted handler to settle. A handler that honours its signal has
 * stopped by then; one that does not is logged (the guarantees assume it stops).
 */
async function handlerStopped(
  running: Promise<unknown>,
  withinMs: number,
  log: Logger,
  reason: unknown,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([
    running.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), withinMs);
    }),
  ]);
  clearTimeout(timer);
  if (!stopped) {
    log.warn('the handler did not stop within a heartbeat interval of its abort signal; pass ctx.signal on', {
      waitedMs: withinMs,
      // why ctx.signal aborted: JobTimeoutError, LeaseLostError, or Suspension (a wait ended the attempt)
      reason: reason instanceof Error ? reason.name : String(reason),
    });
  }
}

/**
 * The lease is gone (taken over, cancelled, or not confirmable): nothing is recorded. A job that
 * ended (e.g. cancelled) needs its message no more; otherwise the message is kept, and when it
 * comes back the claim sees whatever the job has become since.
 */
async function afterLeaseLost(kit: WorkerKit, job: Job, record: SQSRecord, log: Logger): Promise<Outcome> {
  const current = await kit.deps.store.get(job.id).catch(() => undefined);
  if (current && isTerminal(current.state)) return 'done';
  // Back no sooner than the job may be claimed again: a delivery while the lease may still be
  // held would be taken for a duplicate and deleted.
  if (!current) return 'retry';
  const { queue } = kit.deps;
  return waitUntilDue({ job: current, now: kit.clock.now(), queue, queueUrl: kit.route.queueUrl, record, log });
}
