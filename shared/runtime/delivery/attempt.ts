import type { SQSRecord } from 'aws-lambda';
import { appendError, describeError, type Job, type WakeWait } from '../../core/job';
import { JOURNAL_RETENTION_DAYS } from '../../core/journal';
import { METRIC } from '../../core/metrics';
import { isSettled } from '../../core/states';
import { parentsReader } from '../../dispatch/release';
import { JobTimeoutError, LeaseLostError } from '../../errors';
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
import { type AttemptResult, finalFailure, recordFailure, recordSuccess, suspend } from './outcome';
import { handlerPayload, storedResult, withResolvedResults } from './payload';

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
  // An offloaded payload read back, then checked against the type's schema: no call when either fails.
  const payload = await handlerPayload(kit, job, log);
  if (!payload.ok) {
    kit.noCall(record);
    const errors = appendError(job.errors, describeError(payload.error, job.attempts, kit.clock.now(), payload.reason));
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
      outcome = await execute(kit, running, job, payload.value, record, log);
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
  if (outcome.ok) outcome = await storedResult(kit, job, outcome.result);
  return outcome.ok ? await recordSuccess(kit, at, outcome.result) : await recordFailure(kit, at, outcome.error);
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
  if (current && isSettled(current.state)) return 'done';
  // Back no sooner than the job may be claimed again: a delivery while the lease may still be
  // held would be taken for a duplicate and deleted.
  if (!current) return 'retry';
  const { queue } = kit.deps;
  return waitUntilDue({ job: current, now: kit.clock.now(), queue, queueUrl: kit.route.queueUrl, record, log });
}
