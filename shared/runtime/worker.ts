import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { type PlatformConfig, routeOf } from '../config';
import { MAX_VISIBILITY_DELAY_MS, retryDelayMs } from '../core/backoff';
import { type Clock, systemClock, systemTimer, type Timer } from '../core/clock';
import { CANCELLABLE_STATES } from '../core/control';
import type { JobControl } from '../core/control-ports';
import { type Debouncer, debounceScope } from '../core/debounce';
import type { JobGraph } from '../core/dependencies';
import { describeJob } from '../core/describe';
import { ATTEMPT_MARGIN_MS } from '../core/due';
import { isFireMessage } from '../core/fire-message';
import { type FlowSlots, type Slot, WHOLE_TYPE_KEY } from '../core/flow';
import {
  type AttemptError,
  appendError,
  describeError,
  type Job,
  jobMessage,
  type SkipReason,
  type WakeWait,
} from '../core/job';
import { JOURNAL_RETENTION_DAYS, type Journal } from '../core/journal';
import { DEFAULT_LEASE_MS, leaseHeld, MIN_LEASE_MS } from '../core/lease';
import { jsonBytes, MAX_RESULT_BYTES, SQS_MAX_DELAY_SECONDS } from '../core/limits';
import { METRIC, type Metrics, noMetrics } from '../core/metrics';
import type { Pacer } from '../core/pace';
import {
  type ClaimResult,
  type JobQueue,
  type JobScheduler,
  type JobStore,
  retryScheduleName,
  wakeScheduleName,
} from '../core/ports';
import { EARLY_START_TOLERANCE_MS } from '../core/scheduling';
import { isTerminal } from '../core/states';
import { incarnationOf } from '../core/table';
import * as z from '../core/zod-mini';
import { createRelease, parentsReader, releaseDepsOf } from '../dispatch/release';
import { ConfigError, JobTimeoutError, LeaseLostError, PermanentError } from '../errors';
import type { CostMeter } from '../lambda/cost-meter';
import { createLogger, errorFields, type Logger } from '../logger';
import type { ScheduleStore } from '../schedules/ports';
import { persist, progressReporter } from './attempt-support';
import { giveWayTo, newerDebounceRun } from './debounce-gate';
import { resolveFire } from './fire';
import { createFlowGate, jobSlots } from './flow-gate';
import { type JobContext, type JobDefinition, ON_FAILURE_TIMEOUT_MS } from './job-definition';
import { keepLease } from './lease-keeper';
import { createPaceGate } from './pace-gate';
import { expireJob, hideUntil, holdUntilRunAt, mustWaitFor, waitUntilDue } from './scheduling';
import { createWorkflow, Suspension } from './workflow';

/** Dependencies of a worker. The Lambda entry builds them from the environment. */
export interface WorkerDeps {
  config: PlatformConfig;
  store: JobStore;
  queue: JobQueue;
  /** Takes retries whose delay exceeds MAX_VISIBILITY_DELAY_MS (11 h 40 min: a received message's longest visibility). */
  scheduler?: JobScheduler;
  /** @default systemClock */
  clock?: Clock;
  /** What fires an attempt's timeout (`timeoutMs` after it starts). @default systemTimer (real time) */
  timer?: Timer;
  /** Randomness for backoff jitter. @default Math.random */
  random?: () => number;
  /** Lease owner id. @default a random id per worker instance */
  owner?: string;
  /** Lease length; at least {@link MIN_LEASE_MS}, and ≥ 10 × the p99 latency of a conditional write. @default 30_000 */
  leaseMs?: number;
  logger?: Logger;
  /** Recurring schedules, for fire messages (see ./fire.ts). Without it a fire returns to the queue. */
  schedules?: ScheduleStore;
  /** Concurrency slots; required when the job type has `concurrency` limits or a `singleton`. */
  flow?: FlowSlots;
  /** Cancels jobs; required for a `cancel-running` singleton (it cancels the job it replaces). */
  control?: Pick<JobControl, 'cancel'>;
  /** Throttle state; required when the job type has a `throttle`. */
  pacer?: Pacer;
  /** Debounce windows; required when the job type has a `debounce` (a started run closes its window). */
  debouncer?: Debouncer;
  /**
   * The jobs' journals and signal inboxes: what `ctx.step`, `ctx.sleep` and `ctx.waitForSignal`
   * record. Without it, a handler that calls them fails. @default none
   */
  journal?: Journal;
  /** Where the job metrics go (started, succeeded, ..., queue delay, run duration, cost). @default noMetrics */
  metrics?: Metrics;
  /**
   * Attributes the AWS requests of the clients behind the ports to each record (the clients must
   * report to it: `createAwsClients({ cost: meter })`). With it, the writes that end an attempt
   * record the job's cost, and each delivery's cost is a metric. @default no cost is recorded
   */
  meter?: CostMeter;
  /**
   * Job dependencies (`dependsOn`): with it, a job that ends releases its children, and handlers
   * can read `ctx.parents()`. @default no release is run (a job with children leaves them
   * waiting), and `ctx.parents()` rejects with a ConfigError
   */
  graph?: JobGraph;
}

const messageSchema = z.object({
  v: z.literal(1),
  id: z.string().check(z.minLength(1)),
  type: z.string().check(z.minLength(1)),
  after: z.optional(z.string().check(z.minLength(1))),
  notBefore: z.optional(z.iso.datetime()),
});

/** Why a handler's result cannot be stored, or undefined when it can. */
function resultProblem(result: unknown): string | undefined {
  let size: number;
  try {
    size = jsonBytes(result ?? null);
  } catch (error) {
    return `result is not JSON-serialisable: ${error instanceof Error ? error.message : String(error)}`;
  }
  return size > MAX_RESULT_BYTES ? `result is ${size} bytes of JSON; the limit is ${MAX_RESULT_BYTES}` : undefined;
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
 * True when a refused claim shows that an attempt under `token` (or a later one) was claimed,
 * by another delivery, and may still run: running, or cancelled (or cancelled and retried) while
 * it ran, whose lease the store keeps until its handler must have stopped. Slots this delivery
 * entered for `token` before that claim are then the same entries as that attempt's (two
 * deliveries that read the job before its claim share them), and only that attempt's worker gives
 * them back, once its handler has stopped. An attempt that ended through its own write (succeed,
 * retry, fail) no longer carries a lease.
 */
function attemptOfTokenMayRun(claim: ClaimResult, token: number, now: number): boolean {
  return 'job' in claim && claim.job.leaseToken >= token && leaseHeld(claim.job, now);
}

/** `{ jobId }` of a job message, for a log line about the message; empty when the body names none. */
function jobIdOf(record: SQSRecord): { jobId?: string } {
  try {
    const id = (JSON.parse(record.body) as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? { jobId: id } : {};
  } catch {
    return {};
  }
}

/** Receives of an attempt's own message hidden only until its lease fence; later ones wait for the attempt's deadline. */
const OWN_MESSAGE_FENCE_RETURNS = 3;

/** A signal wait whose inbox could not be read after its suspend looks again this soon. */
const SIGNAL_LOOK_AGAIN_SECONDS = 10;

/** What to tell the event source mapping about one record. */
type Outcome = 'done' | 'retry';

/**
 * Builds the SQS batch handler for a job definition. Every record of a batch is handled
 * concurrently; only records that must come back are listed in `batchItemFailures`.
 */
export function createWorker(
  def: JobDefinition,
  deps: WorkerDeps,
): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  const clock = deps.clock ?? systemClock;
  const timer = deps.timer ?? systemTimer;
  const random = deps.random ?? Math.random;
  const owner = deps.owner ?? `worker-${randomUUID()}`;
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  if (!Number.isFinite(leaseMs) || leaseMs < MIN_LEASE_MS) {
    throw new ConfigError(
      `leaseMs must be at least ${MIN_LEASE_MS} ms (got ${leaseMs}): shorter leases expire before their first heartbeat`,
    );
  }
  const baseLog = (deps.logger ?? createLogger({ level: deps.config.logLevel })).child({ type: def.spec.type });
  const metrics = deps.metrics ?? noMetrics;
  const type = def.spec.type;
  const meter = deps.meter;
  /** What the current delivery spent so far, for the write that ends its attempt (nothing without a meter). */
  const spent = () => (meter ? { cost: meter.current() } : {});
  const configured = deps.config.routes[def.spec.type];
  if (!configured) throw new ConfigError(`no route configured for job type "${def.spec.type}"`);
  const route = configured;
  const expiresAt = (now: number) => Math.floor(now / 1000) + deps.config.retentionDays * 86_400;
  const limited = (def.spec.concurrency?.length ?? 0) > 0 || def.spec.singleton !== undefined;
  if (limited && !deps.flow) {
    throw new ConfigError(`job type "${def.spec.type}" has flow control: the worker needs its flow slots`);
  }
  if (def.spec.throttle && !deps.pacer) {
    throw new ConfigError(`job type "${def.spec.type}" has a throttle: the worker needs its pacer`);
  }
  const pace = deps.pacer ? createPaceGate({ spec: def.spec, pacer: deps.pacer, store: deps.store, clock }) : undefined;
  if (def.spec.debounce && !deps.debouncer) {
    throw new ConfigError(`job type "${def.spec.type}" has a debounce: the worker needs its debouncer`);
  }
  const control = deps.control;
  if (def.spec.singleton?.mode === 'cancel-running' && !control) {
    throw new ConfigError(`job type "${def.spec.type}" has a cancel-running singleton: the worker needs job control`);
  }
  const gate =
    limited && deps.flow
      ? createFlowGate({
          slots: deps.flow,
          store: deps.store,
          queue: deps.queue,
          queueUrlOf: (type) => routeOf(deps.config, type)?.queueUrl,
          clock,
          ...(control
            ? {
                cancel: async (jobId: string) => {
                  const now = clock.now();
                  await control.cancel({ id: jobId, from: CANCELLABLE_STATES, now, expiresAt: expiresAt(now) });
                  await releaseAfterEnd(jobId, baseLog.child({ jobId }));
                },
              }
            : {}),
        })
      : undefined;

  const release = deps.graph
    ? createRelease(
        releaseDepsOf({ config: deps.config, graph: deps.graph, queue: deps.queue, scheduler: deps.scheduler }),
        clock,
      )
    : undefined;
  /** Runs the release of a job that ended; throws when it failed, so the message comes back. */
  async function releaseAfterEnd(jobId: string, log: Logger): Promise<void> {
    if (release && !(await release.afterEnd(jobId, log))) throw new Error(`the release of job ${jobId} failed`);
  }

  /** Records `failed` as `writer` (the owner this delivery claimed with, or tried to); then runs onFailure. */
  async function finalFailure(job: Job, errors: AttemptError[], writer: string, log: Logger): Promise<void> {
    const now = clock.now();
    await persist(
      () => deps.store.fail({ job, now, errors, expiresAt: expiresAt(now), writer, ...spent() }),
      log,
      'recording the failure',
    );
    metrics.add(METRIC.failed, type);
    log.error('job failed', { attempts: job.attempts, lastError: errors.at(-1)?.message });
    const onFailure = def.onFailure;
    // its children's release after its hook, which runs once (a failed release keeps the message)
    if (!onFailure) return releaseAfterEnd(job.id, log);
    // Through a promise, so a hook that throws synchronously is caught like one that rejects.
    const hook = Promise.resolve().then(() =>
      onFailure(job.payload, { jobId: job.id, type: job.type, attempts: job.attempts, errors }),
    );
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
    await releaseAfterEnd(job.id, log);
  }

  async function runAttempt(job: Job, record: SQSRecord, log: Logger): Promise<Outcome> {
    // The owner we claimed with: unique per claim, so it identifies our writes.
    const writer = job.leaseOwner ?? owner;
    // zod's core parse: the job author's schema may be full zod or zod/mini.
    const parsed = z.safeParse(def.spec.payload, job.payload);
    if (!parsed.success) {
      const err = new PermanentError(`payload no longer matches the ${def.spec.type} schema: ${parsed.error.message}`);
      await finalFailure(
        job,
        appendError(job.errors, describeError(err, job.attempts, clock.now(), 'invalid_payload')),
        writer,
        log,
      );
      return 'done';
    }

    const controller = new AbortController();
    let leaseLost = false;
    const loseLease = (error: LeaseLostError) => {
      if (leaseLost) return;
      leaseLost = true;
      controller.abort(error);
      log.warn('lease lost; aborting handler', { token: job.leaseToken });
    };
    // From the claim on: if the lease cannot be renewed, the handler is stopped at least one
    // heartbeat interval before it runs out, so another worker's takeover never overlaps it.
    const keeper = keepLease({
      job,
      store: deps.store,
      queue: deps.queue,
      queueUrl: route.queueUrl,
      receiptHandle: record.receiptHandle,
      clock,
      leaseMs,
      log,
      onLost: loseLease,
    });
    const progress = progressReporter({ job, store: deps.store, clock, log, onLeaseLost: loseLease });
    let cancelTimeout = () => {};
    let outcome: { ok: true; result: unknown } | { ok: false; error: unknown } = {
      ok: false,
      error: new LeaseLostError(job.id, job.leaseToken),
    };
    // Rejects when a sleep or a wait ends the attempt: the worker stops waiting for the handler
    // then, as at a timeout (a handler that catches the Suspension and goes on cannot hold it).
    let onSuspend: (wait: WakeWait) => void = () => {};
    const suspended = new Promise<never>((_, reject) => {
      onSuspend = (wait) => reject(new Suspension(wait));
    });
    suspended.catch(() => {}); // the race may leave it rejected later; nobody else awaits it
    const workflow = createWorkflow({
      job,
      ...(deps.journal ? { journal: deps.journal } : {}),
      clock,
      signal: controller.signal,
      expiresAt: (now) => Math.floor(now / 1000) + JOURNAL_RETENTION_DAYS * 86_400,
      onSuspend: (wait) => onSuspend(wait),
    });
    try {
      await holdUntilRunAt(job, () => clock.now()); // claimed up to 1 s before its runAt
      if (keeper.check()) {
        cancelTimeout = timer.after(def.spec.timeoutMs, () =>
          controller.abort(new JobTimeoutError(def.spec.timeoutMs)),
        );
        const aborted = new Promise<never>((_, reject) => {
          controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
        });
        aborted.catch(() => {}); // the race may leave it rejected later; nobody else awaits it
        const ctx: JobContext = {
          jobId: job.id,
          type: job.type,
          attempt: job.attempts,
          maxAttempts: job.maxAttempts,
          scheduledAt: job.runAt,
          signal: controller.signal,
          log,
          progress: progress.report,
          parents: parentsReader(deps.graph, job),
          step: workflow.step,
          sleep: workflow.sleep,
          waitForSignal: workflow.waitForSignal,
        };
        // Through a promise, so a handler that throws synchronously is caught like one that rejects.
        const runStart = clock.now();
        const running = Promise.resolve().then(() => def.run(parsed.data, ctx));
        try {
          outcome = { ok: true, result: await Promise.race([running, aborted, suspended]) };
        } catch (error) {
          outcome = { ok: false, error };
        }
        metrics.add(METRIC.runDuration, type, clock.now() - runStart);
        // Aborted (timeout, lost lease): give the handler its heartbeat interval to stop, while
        // the lease is still kept, before anything is recorded or the message comes back, so the
        // next attempt never starts beside it (nor a frozen Lambda resumes it later).
        if (controller.signal.aborted) {
          await handlerStopped(running, keeper.intervalMs, log, controller.signal.reason);
        } else {
          const wait = workflow.suspended();
          if (wait) {
            // A sleep or a wait ended the attempt: the same end as a timeout, before the job is
            // written waiting and its slots are given back (so neither the next attempt nor the
            // next holder of a slot runs beside anything of this one). The calls it left running
            // get their interval first (a step that finishes is recorded; a second wait joins the
            // first), then ctx.signal aborts, with the Suspension as its reason: work beside the
            // wait that the handler no longer awaits (the rest of a rejected Promise.all) stops
            // too. The handler itself is waited for up to an interval, and logged if it runs on.
            await workflow.settle(keeper.intervalMs);
            controller.abort(new Suspension(workflow.suspended() ?? wait));
            await handlerStopped(running, keeper.intervalMs, log, controller.signal.reason);
          }
        }
        // Steps or waits the handler did not wait for (a Promise.all that rejected early) end, or
        // are stopped, while the lease is still kept: none outlives the attempt.
        if (!(await workflow.settle(keeper.intervalMs))) {
          if (!controller.signal.aborted)
            controller.abort(new Error('the handler ended while a step was still running'));
          if (!(await workflow.settle(keeper.intervalMs))) {
            log.warn('a step still ran a heartbeat interval after its abort signal; pass ctx.signal on', {
              waitedMs: keeper.intervalMs,
            });
          }
        }
      }
    } finally {
      cancelTimeout();
      // A progress write still in flight lands before the attempt's end is written (while the
      // lease is still kept): one that landed after it would be refused, as if the lease were lost.
      await progress.stop(keeper.intervalMs);
      await keeper.stop();
    }

    // The lease is gone (taken over, cancelled, or not confirmable): record nothing. A job that
    // ended (e.g. cancelled) needs its message no more; otherwise keep the message, and when it
    // comes back the claim sees whatever the job has become since.
    if (leaseLost) {
      const current = await deps.store.get(job.id).catch(() => undefined);
      if (current && isTerminal(current.state)) return 'done';
      // Back no sooner than the job may be claimed again: a delivery while the lease may still be
      // held would be taken for a duplicate and deleted.
      if (!current) return 'retry';
      return waitUntilDue({ job: current, now: clock.now(), queue: deps.queue, queueUrl: route.queueUrl, record, log });
    }
    // A sleep or a signal wait ended the attempt: whatever the handler did with it, the job waits
    // (unless it misused them: then it fails, whatever it returned).
    const misuse = workflow.misuse();
    if (misuse) outcome = { ok: false, error: misuse };
    const wait = misuse ? undefined : workflow.suspended();
    if (wait) return await suspend(job, wait, record, writer, log);
    if (outcome.ok) {
      const problem = resultProblem(outcome.result);
      if (problem) outcome = { ok: false, error: new PermanentError(problem) };
    }
    const now = clock.now();
    if (outcome.ok) {
      const result = outcome.result;
      const written = await persist(
        () => deps.store.succeed({ job, now, result, expiresAt: expiresAt(now), writer, ...spent() }),
        log,
        'recording success',
      );
      metrics.add(METRIC.succeeded, type);
      log.info('job succeeded', { durationMs: now - Date.parse(job.startedAt ?? job.updatedAt) });
      // the write says whether it has children (a store that does not say: the release reads it)
      const children = written ? written.childCount > 0 : true;
      if (release && children && !(await release.afterEnd(job.id, log))) return 'retry';
      if (!release && written && written.childCount > 0) {
        log.error('job has children but this worker has no job graph (WorkerDeps.graph): they are not released', {
          children: written.childCount,
        });
      }
      return 'done';
    }
    const reason = outcome.error instanceof JobTimeoutError ? 'timeout' : 'error';
    const errors = appendError(job.errors, describeError(outcome.error, job.attempts, now, reason));
    if (outcome.error instanceof PermanentError || job.attempts >= job.maxAttempts) {
      await finalFailure(job, errors, writer, log);
      return 'done';
    }
    let delay = retryDelayMs(job.backoff ?? def.spec.retry.backoff, job.attempts, random);
    const viaScheduler = delay > MAX_VISIBILITY_DELAY_MS && deps.scheduler !== undefined;
    if (delay > MAX_VISIBILITY_DELAY_MS && !viaScheduler) {
      log.warn(
        'retry delay exceeds what a message can carry (11 h 40 min) and no scheduler is configured; capping it',
        { delayMs: delay },
      );
      delay = MAX_VISIBILITY_DELAY_MS;
    }
    await persist(
      // the attempt's stored error is kept for the retention after the retry is due
      () =>
        deps.store.retry({
          job,
          now,
          runAt: now + delay,
          errors,
          expiresAt: expiresAt(now + delay),
          writer,
          ...spent(),
        }),
      log,
      'recording the retry',
    );
    metrics.add(METRIC.retried, type);
    log.warn('attempt failed; will retry', { reason, delayMs: delay, viaScheduler, ...errorFields(outcome.error) });
    return await deferMessage({
      job,
      runAt: now + delay,
      now,
      scheduleName: viaScheduler ? retryScheduleName(job.id, job.attempts) : undefined,
      record,
      log,
      what: 'retry',
    });
  }

  /**
   * Brings the job's message back at `runAt`: through a one-time schedule (`scheduleName`) when
   * one is given, else on this message's visibility (at most 11 h 40 min; a message back early is
   * hidden again), else, when that fails (the message may be gone), as a new message.
   */
  async function deferMessage(input: {
    job: Job;
    runAt: number;
    now: number;
    scheduleName: string | undefined;
    record: SQSRecord;
    log: Logger;
    what: string;
  }): Promise<Outcome> {
    const { job, runAt, now, record, log, what } = input;
    const delay = Math.max(0, runAt - now);
    if (input.scheduleName !== undefined && deps.scheduler) {
      // The schedule sends a fresh message at runAt; this one is done.
      const message = jobMessage({ id: job.id, type: job.type }, { notBefore: runAt });
      const name = input.scheduleName;
      try {
        await persist(
          () =>
            deps.scheduler?.scheduleJob({ name, fireAt: runAt, queueArn: route.queueArn, message }) ??
            Promise.resolve(),
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
      await deps.queue.changeVisibility(
        route.queueUrl,
        record.receiptHandle,
        Math.min(delay, MAX_VISIBILITY_DELAY_MS) / 1000,
      );
      return 'retry';
    } catch (error) {
      // Our message may be gone (a duplicate delivery of it was deleted) or the call failed:
      // send a fresh one carrying the delay, so the job cannot be lost. A spare copy is harmless.
      log.warn(`could not set the ${what} delay on the message; sending a new one`, errorFields(error));
      const message = jobMessage({ id: job.id, type: job.type });
      // SQS delays at most 15 min: a message that arrives before the job is due is hidden again.
      await persist(
        () => deps.queue.send(route.queueUrl, message, Math.min(SQS_MAX_DELAY_SECONDS, Math.ceil(delay / 1000))),
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
  async function backIfSignalled(job: Job, signal: string, record: SQSRecord, log: Logger): Promise<boolean> {
    if (!deps.journal) return false;
    const id = job.id;
    let seconds = SIGNAL_LOOK_AGAIN_SECONDS;
    try {
      const inbox = { jobId: id, incarnation: incarnationOf(job.createdAt), name: signal };
      if (!(await deps.journal.signal(inbox))) return false;
      if (await deps.store.wake({ id, signal, now: clock.now() })) {
        log.info('its signal had arrived: resuming now', { name: signal });
        seconds = 0;
      }
    } catch (error) {
      log.warn('could not look for the signal the job waits for; looking again soon', errorFields(error));
    }
    await deps.queue
      .changeVisibility(route.queueUrl, record.receiptHandle, seconds)
      .catch((error: unknown) => log.warn('could not bring the message back soon', errorFields(error)));
    return true;
  }

  /**
   * Ends the attempt to wait (a sleep, or a signal's wait): the job is `waiting`, its attempt
   * given back, due at the wait's end. A signal that arrived meanwhile (sent while the handler
   * looked at its inbox, before this write) makes it due at once: whichever of the sender and this
   * worker writes last sees the other's write.
   */
  async function suspend(job: Job, wait: WakeWait, record: SQSRecord, writer: string, log: Logger): Promise<Outcome> {
    const now = clock.now();
    const runAt = Date.parse(wait.until);
    await persist(
      () => deps.store.suspend({ job, now, runAt, waitingFor: wait, writer, ...spent() }),
      log,
      `recording the ${wait.kind} wait`,
    );
    metrics.add(METRIC.suspended, type);
    log.info(wait.kind === 'sleep' ? 'job sleeps' : 'job waits for a signal', { name: wait.key, until: wait.until });
    if (wait.kind === 'signal' && (await backIfSignalled(job, wait.key, record, log))) return 'retry';
    const viaScheduler = runAt - now > MAX_VISIBILITY_DELAY_MS && deps.scheduler !== undefined;
    return await deferMessage({
      job,
      runAt,
      now,
      scheduleName: viaScheduler ? wakeScheduleName(job.id, (job.resumes ?? 0) + 1) : undefined,
      record,
      log,
      what: `${wait.kind} wait`,
    });
  }

  async function handleRecord(record: SQSRecord): Promise<Outcome> {
    const receiveCount = Number(record.attributes?.ApproximateReceiveCount ?? '1');
    let body: unknown;
    try {
      body = JSON.parse(record.body);
    } catch {
      body = undefined;
    }
    if (isFireMessage(body)) {
      const { store: jobs, schedules } = deps;
      const fired = await resolveFire({
        body,
        record,
        type: def.spec.type,
        jobs,
        schedules,
        send: (message) => deps.queue.send(route.queueUrl, message),
        retentionMs: deps.config.retentionDays * 86_400_000,
        now: clock.now(),
        log: baseLog,
      });
      if (fired.kind === 'settled') {
        if (fired.comeBackSeconds !== undefined) {
          await deps.queue
            .changeVisibility(route.queueUrl, record.receiptHandle, fired.comeBackSeconds)
            .catch((error: unknown) => baseLog.warn('could not bring the fire back soon', errorFields(error)));
        }
        return fired.outcome;
      }
      body = fired.message;
    }
    const message = messageSchema.safeParse(body);
    if (!message.success || message.data.type !== def.spec.type) {
      baseLog.error('malformed or misrouted message; leaving it for the DLQ', {
        messageId: record.messageId,
        receiveCount,
        reason: message.success ? `type ${message.data.type} on the ${def.spec.type} queue` : 'not a job message',
      });
      return 'retry';
    }
    const { id } = message.data;
    const log = baseLog.child({ jobId: id, messageId: record.messageId });
    try {
      const waitFor = { store: deps.store, queue: deps.queue, queueUrl: route.queueUrl, record, log };
      const notBefore = message.data.notBefore === undefined ? undefined : Date.parse(message.data.notBefore);
      if (notBefore !== undefined && notBefore - clock.now() > EARLY_START_TOLERANCE_MS)
        return await hideUntil({ ...waitFor, until: notBefore, now: clock.now() });
      if (message.data.after && (await mustWaitFor({ after: message.data.after, ...waitFor }))) return 'retry';
      // Flow control: a throttle's turn, then concurrency and singleton slots, before the claim (a
      // job that has to wait is not claimed, so it spends no attempt); see ./pace-gate.ts, ./flow-gate.ts.
      let slots: Slot[] = [];
      // The attempt token the slots were taken for (the one the claim should give), if taken.
      let entered: number | undefined;
      // The attempt token a throttle turn was taken for, if one was.
      let paced: number | undefined;
      // One time for the gates' "is it due" and the claim's, so the two cannot disagree.
      const now = clock.now();
      // The job as the gates see it: read once for all of them (again only after a write of ours)
      let read: Job | undefined;
      let fresh = false;
      if (def.spec.debounce && deps.debouncer) {
        // a newer job of its key runs, or ran: this run does not (./debounce-gate.ts)
        read = await deps.store.get(id);
        fresh = true;
        const current = read;
        const newer =
          current &&
          (await newerDebounceRun({ store: deps.store, debouncer: deps.debouncer }, def.spec.type, current, now));
        if (current && newer) {
          const skipped = await persist(
            () => deps.store.skip?.(giveWayTo(current, newer, now, expiresAt(now))) ?? Promise.resolve(false),
            log,
            'recording the skip',
          );
          if (skipped) {
            await releaseAfterEnd(id, log);
            log.info('debounced: a newer job of its key runs instead', { by: newer.id });
            return 'done';
          }
          // refused: the job changed since the read (it started, or ended): read it again below
          fresh = false;
        }
      }
      if (gate || pace) {
        const current = fresh ? read : await deps.store.get(id);
        if (current && gate) slots = jobSlots(def.spec, current);
        const takeover =
          current?.state === 'running' && current.leaseExpiresAt !== undefined && !leaseHeld(current, now);
        // due to start, and no earlier attempt (cancelled, then retried) may still run: else the claim is fenced
        const due =
          current !== undefined &&
          current.pendingParents === undefined &&
          current.state !== 'running' &&
          !isTerminal(current.state) &&
          Date.parse(current.runAt) - now <= EARLY_START_TOLERANCE_MS &&
          !leaseHeld(current, now);
        if (current && (due || takeover) && pace) {
          const turn = await pace.turn(current, current.leaseToken + 1, log);
          if (turn.kind === 'later') return await hideUntil({ ...waitFor, until: turn.until, now: clock.now() });
          paced = current.leaseToken + 1;
        }
        if (current && gate && isTerminal(current.state)) {
          // handed a slot after it ended (cancelled while it waited), or a duplicate of a finished
          // job; kept when a slot could not be given back, so that the next delivery tries again
          if (!(await gate.leaveIfHeld(current, slots, log))) return 'retry';
        } else if (current && gate && (takeover || due)) {
          const entry = await gate.enter(current, slots, current.leaseToken + 1, log);
          if (entry.kind === 'skipped') return await skipJob(current, entry, log);
          if (entry.kind === 'waiting') {
            log.info('waiting for a concurrency slot', {
              scope: entry.slot.scope,
              key: entry.slot.key,
              ticket: entry.ticket,
            });
            return 'done';
          }
          entered = current.leaseToken + 1;
        }
        // running under a live lease: a duplicate (its slots are the attempt's); not due: the claim says so
      }
      // Unique per claim: an SDK retry of a claim whose response was lost finds its own lease,
      // and the writes that end the attempt are told apart from any other worker's.
      const claimOwner = `${owner}:${randomUUID().slice(0, 8)}`;
      const claim = await deps.store.claim({
        id,
        type: def.spec.type,
        owner: claimOwner,
        now,
        leaseMs,
        attemptTimeoutMs: def.spec.timeoutMs,
        messageId: record.messageId,
      });
      if (def.spec.debounce && deps.debouncer && claim.kind === 'claimed') {
        // The run started: later jobs of its key open a new window (a failed close leaves this one
        // open, and the next job replaces nothing that is still waiting: it is its own run).
        const key = claim.job.debounceKey ?? WHOLE_TYPE_KEY;
        await deps.debouncer
          .close({ scope: debounceScope(def.spec.type), key, jobId: id })
          .catch((error: unknown) => log.warn('could not close the debounce window', errorFields(error)));
      }
      if (pace && claim.kind === 'claimed' && paced !== claim.job.leaseToken) {
        // Claimed without a turn taken for this attempt (the job changed between the read and
        // the claim): take one now, or give the attempt back before it runs, due at its turn.
        const turn = await pace.turn(claim.job, claim.job.leaseToken, log);
        if (turn.kind === 'later') {
          const at = clock.now();
          await giveBack(
            claim.job,
            turn.until,
            claimOwner,
            log,
            'giving back an attempt that must wait for its throttle turn',
          );
          // the slots taken for it go on meanwhile
          if (gate && entered !== undefined) await gate.leave({ id }, slots, log, entered);
          return await hideUntil({ ...waitFor, until: turn.until, now: at });
        }
      }
      if (gate && slots.length > 0) {
        if (claim.kind === 'claimed') {
          const token = claim.job.leaseToken;
          if (entered !== token) {
            // Claimed without its slots taken for this attempt (the job changed between the read
            // and the claim): take them now, or give the attempt back before it runs.
            const entry = await gate.enter(claim.job, slots, token, log);
            // (a claimed job has an attempt, so its singleton waits rather than skips)
            if (entry.kind !== 'entered') {
              log.info('claimed without a free concurrency slot; waiting for one', { key: entry.slot.key });
              await giveBack(claim.job, clock.now(), claimOwner, log, 'giving back an attempt that has no slot');
              return 'done';
            }
          }
          // Once the attempt is over, unless another delivery took the job over: its slots go on.
          let outcome: Outcome = 'retry';
          try {
            outcome = await handleClaim(claim, record, log, claimOwner, receiveCount);
          } finally {
            // Unreadable: give them back anyway; the token keeps a newer attempt's entries (a
            // takeover) safe, and a slot left behind would be held until a job in line looks.
            const after = await persist(() => deps.store.get(id), log, 'reading the job after its attempt').catch(
              () => undefined,
            );
            // Not given back: keep the message; its next delivery finds the job ended and gives them back.
            if (after?.state !== 'running' && !(await gate.leave({ id }, slots, log, token))) outcome = 'retry';
          }
          return outcome;
        }
        const outcome = await handleClaim(claim, record, log, claimOwner, receiveCount);
        // Not started: the slots taken for it go on. None for a duplicate of a running job: the
        // entry it found is the running attempt's, which gives it back when it ends. Nor when
        // another delivery claimed the attempt they were taken for, which may still run (see
        // attemptOfTokenMayRun): the entry is that attempt's too.
        if (claim.kind !== 'busy' && entered !== undefined && !attemptOfTokenMayRun(claim, entered, now))
          await gate.leave({ id }, slots, log, entered);
        return outcome;
      }
      return await handleClaim(claim, record, log, claimOwner, receiveCount);
    } catch (error) {
      if (error instanceof LeaseLostError) {
        log.warn('late write rejected: the lease was taken over or the job changed', errorFields(error));
        return 'done';
      }
      log.error('could not process message; it will be delivered again', errorFields(error));
      return 'retry';
    }
  }

  /**
   * Gives a claimed attempt back before its handler ran (no slot, or a throttle turn later): the
   * job is due again at `runAt`, with no error of its own and the attempt refunded.
   */
  async function giveBack(job: Job, runAt: number, writer: string, log: Logger, what: string): Promise<void> {
    const now = clock.now();
    await persist(
      () =>
        deps.store.retry({
          job,
          now,
          runAt,
          errors: [],
          expiresAt: expiresAt(runAt),
          writer,
          refund: true,
          ...spent(),
        }),
      log,
      what,
    );
  }

  /** Ends a job its `skip` singleton turned away: it never runs. */
  async function skipJob(job: Job, entry: { slot: Slot; by?: string }, log: Logger): Promise<Outcome> {
    const now = clock.now();
    const reason: SkipReason = {
      kind: 'singleton',
      key: entry.slot.key,
      ...(entry.by === undefined ? {} : { by: entry.by }),
      at: new Date(now).toISOString(),
    };
    const skipped = await persist(
      () => deps.store.skip?.({ job, now, expiresAt: expiresAt(now), reason }) ?? Promise.resolve(false),
      log,
      'recording the skip',
    );
    if (skipped) log.info('skipped: a job of its singleton key runs', { key: entry.slot.key, by: entry.by });
    if (skipped) await releaseAfterEnd(job.id, log);
    else log.info('job changed before it could be skipped; nothing to do');
    return 'done';
  }

  async function handleClaim(
    claim: ClaimResult,
    record: SQSRecord,
    log: Logger,
    claimOwner: string,
    receiveCount: number,
  ): Promise<Outcome> {
    const waitFor = { store: deps.store, queue: deps.queue, queueUrl: route.queueUrl, record, log };
    switch (claim.kind) {
      case 'missing':
        log.warn('no job for this message (expired or never written); discarding it');
        return 'done';
      case 'finished':
        if (release?.pending(claim.job)) return (await release.afterEnd(claim.job.id, log)) ? 'done' : 'retry';
        log.info('duplicate delivery of a finished job; discarding it', { state: claim.job.state });
        return 'done';
      case 'blocked':
        // its parents' release sends it a message of its own once none is left to wait for
        log.info('job waits for its parents; discarding this message', { pendingParents: claim.job.pendingParents });
        return 'done';
      case 'busy':
        // The attempt's own message, back while its lease may be held (its worker died, or
        // gave up its lease): keep it, hidden until the lease may be taken over. Any other copy
        // is deleted, not bounced: a long job's duplicates would otherwise walk into the DLQ.
        if (claim.job.leaseMessage === record.messageId) {
          // Until the lease may be taken over (a dead worker's job resumes then); after a few
          // such returns, until the attempt must have ended (its Lambda timed out): a live
          // attempt keeps renewing its lease, and each return counts toward maxReceiveCount.
          const claimedAt = Date.parse(claim.job.startedAt ?? claim.job.updatedAt);
          const deadline = claimedAt + def.spec.timeoutMs + ATTEMPT_MARGIN_MS;
          const notBefore = receiveCount > OWN_MESSAGE_FENCE_RETURNS ? deadline : undefined;
          return await waitUntilDue({
            ...waitFor,
            job: claim.job,
            now: clock.now(),
            ...(notBefore ? { notBefore } : {}),
          });
        }
        log.info('duplicate delivery of a job running under a live lease; discarding it');
        return 'done';
      case 'early':
      case 'fenced': {
        // A job that waits for a signal whose wake was lost (its sender, or the worker that
        // suspended it, died between the two writes): its signal is in its inbox; wake it now.
        const waiting = claim.job;
        if (
          claim.kind === 'early' &&
          waiting.state === 'waiting' &&
          waiting.waitSignal !== undefined &&
          (await backIfSignalled(waiting, waiting.waitSignal, record, log))
        )
          return 'retry';
        // Not due yet, or an earlier attempt (cancelled, then retried) may still be running.
        return await waitUntilDue({ ...waitFor, job: claim.job, now: clock.now() });
      }
      case 'past-deadline':
        await expireJob({ job: claim.job, now: clock.now(), expiresAt: expiresAt(clock.now()), ...waitFor });
        await releaseAfterEnd(claim.job.id, log);
        return 'done';
      case 'exhausted': {
        const job = claim.job;
        const err = new Error('the last attempt stopped without recording a result (lease expired)');
        await finalFailure(
          job,
          appendError(job.errors, describeError(err, job.attempts, clock.now(), 'lease_expired')),
          claimOwner,
          log,
        );
        return 'done';
      }
      case 'claimed': {
        const started = Date.parse(claim.job.startedAt ?? claim.job.updatedAt);
        metrics.add(METRIC.started, type);
        // from due (enqueued, or its delay or backoff over) to start; a claim may come up to 1 s early
        metrics.add(METRIC.queueDelay, type, Math.max(0, started - Date.parse(claim.job.runAt)));
        const attemptLog = log.child({ attempt: claim.job.attempts });
        attemptLog.info('attempt started', {
          token: claim.job.leaseToken,
          ...describeJob(def.spec, claim.job.payload),
        });
        return await runAttempt(claim.job, record, attemptLog);
      }
    }
  }

  /** One record, with what it cost (as a metric) and whether its message now goes to the DLQ. */
  async function deliver(record: SQSRecord): Promise<Outcome> {
    let outcome: Outcome;
    if (meter) {
      const measured = await meter.measure(() => handleRecord(record));
      metrics.add(METRIC.requests, type, measured.cost.requests);
      metrics.add(METRIC.writeUnits, type, measured.cost.writeUnits);
      outcome = measured.value;
    } else {
      outcome = await handleRecord(record);
    }
    const receiveCount = Number(record.attributes?.ApproximateReceiveCount ?? '1');
    const maxReceiveCount = route.maxReceiveCount;
    if (outcome === 'retry' && maxReceiveCount !== undefined && receiveCount >= maxReceiveCount) {
      metrics.add(METRIC.deadLettered, type);
      baseLog.error('the message had its last receive: SQS moves it to the dead-letter queue', {
        ...jobIdOf(record),
        messageId: record.messageId,
        receiveCount,
        maxReceiveCount,
      });
    }
    return outcome;
  }

  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const outcomes = await Promise.all(event.Records.map((record) => deliver(record)));
    return {
      batchItemFailures: event.Records.flatMap((record, i) =>
        outcomes[i] === 'retry' ? [{ itemIdentifier: record.messageId }] : [],
      ),
    };
  };
}
