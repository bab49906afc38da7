/**
 * Probe jobs for lifecycle and chaos tests: job types whose handler records every execution
 * (start, end and how it ended) per job id in an in-process {@link ProbeTracker}, and that can
 * sleep, fail a number of times, time out, hang until released, die ("killed" worker), or
 * ignore their abort signal, as their payload says.
 *
 * The tracker is what the tests assert on: how many handlers ran, how many COMPLETED (returned
 * a result to the runtime), and whether two handlers of one job ever ran at the same time.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import type { BackoffInput } from '../../shared/core/backoff';
import type { Subscription } from '../../shared/core/events';
import type { ConcurrencyLimit } from '../../shared/core/flow';
import { defineJobType, type JobTypeOptions } from '../../shared/core/job-type';
import type { PriorityOptions } from '../../shared/core/priority';
import { defineJob } from '../../shared/runtime/define-job';
import type { FailureInfo, JobContext, JobDefinition } from '../../shared/runtime/job-definition';
import type { DeadZones } from './faults';

/** How one execution of a probe handler ended. */
export type ExecutionEnd =
  /** Returned a result to the runtime. */
  | 'completed'
  /** Threw (a planned failure). */
  | 'failed'
  /** Stopped because its signal fired (timeout or lost lease). */
  | 'aborted'
  /** Its worker "died" mid-attempt: never returns, never completes. */
  | 'killed';

export interface Execution {
  jobId: string;
  /** `ctx.attempt` as the runtime passed it. */
  attempt: number;
  startedAt: number;
  endedAt?: number;
  end?: ExecutionEnd;
  /** Why the signal fired, when it did. */
  abortReason?: string;
}

export interface JobTrace {
  executions: Execution[];
  /** Handlers of this job running right now. */
  running: number;
  /** Most handlers of this job ever running at once. */
  maxRunning: number;
  /** `onFailure` calls, with what they got. */
  onFailure: FailureInfo[];
}

/** Counts of a job's executions by how they ended. */
export function countEnds(trace: JobTrace | undefined): Record<ExecutionEnd | 'started' | 'open', number> {
  const out = { started: 0, open: 0, completed: 0, failed: 0, aborted: 0, killed: 0 };
  for (const e of trace?.executions ?? []) {
    out.started += 1;
    if (e.end) out[e.end] += 1;
    else out.open += 1;
  }
  return out;
}

/** One run of a durable step's body (`ctx.step`) in a probe. */
export interface StepRun {
  /** Unique per run: what the body returns, so the recorded result names the run that won. */
  id: string;
  step: number;
  startedAt: number;
  endedAt?: number;
}

/** Shared, in-process record of every probe execution. */
export class ProbeTracker {
  readonly jobs = new Map<string, JobTrace>();
  /** Runs of each job's step bodies, in order. */
  readonly stepRuns = new Map<string, StepRun[]>();
  /** What each execution got back from each step: the run id its recorded result names, and when (real ms). */
  readonly stepResults = new Map<string, { step: number; by: string; at: number }[]>();
  private stepRunSeq = 0;

  stepBegin(jobId: string, step: number): StepRun {
    const run: StepRun = { id: `r${++this.stepRunSeq}`, step, startedAt: Date.now() };
    this.stepRuns.set(jobId, [...(this.stepRuns.get(jobId) ?? []), run]);
    return run;
  }

  stepEnd(run: StepRun): void {
    run.endedAt = Date.now();
  }

  stepResult(jobId: string, step: number, by: string): void {
    this.stepResults.set(jobId, [...(this.stepResults.get(jobId) ?? []), { step, by, at: Date.now() }]);
  }
  /** Every time a handler started while another handler of the same job was running. */
  readonly overlaps: { jobId: string; attempt: number; runningAttempts: number[]; at: number }[] = [];
  private readonly gates = new Map<string, { promise: Promise<void>; release: () => void }>();
  private readonly listeners = new Set<() => void>();

  trace(jobId: string): JobTrace {
    let trace = this.jobs.get(jobId);
    if (!trace) {
      trace = { executions: [], running: 0, maxRunning: 0, onFailure: [] };
      this.jobs.set(jobId, trace);
    }
    return trace;
  }

  start(jobId: string, attempt: number): Execution {
    const trace = this.trace(jobId);
    if (trace.running > 0) {
      const runningAttempts = trace.executions.filter((e) => !e.end).map((e) => e.attempt);
      this.overlaps.push({ jobId, attempt, runningAttempts, at: Date.now() });
    }
    trace.running += 1;
    trace.maxRunning = Math.max(trace.maxRunning, trace.running);
    const execution: Execution = { jobId, attempt, startedAt: Date.now() };
    trace.executions.push(execution);
    this.changed();
    return execution;
  }

  end(execution: Execution, end: ExecutionEnd, abortReason?: string): void {
    if (execution.end) return;
    execution.end = end;
    execution.endedAt = Date.now();
    if (abortReason) execution.abortReason = abortReason;
    this.trace(execution.jobId).running -= 1;
    this.changed();
  }

  recordFailureHook(jobId: string, info: FailureInfo): void {
    this.trace(jobId).onFailure.push(info);
    this.changed();
  }

  /** Executions of `jobId` that ended as `end` (all if omitted). */
  count(jobId: string, end?: ExecutionEnd): number {
    const executions = this.jobs.get(jobId)?.executions ?? [];
    return end ? executions.filter((e) => e.end === end).length : executions.length;
  }

  /** Makes the next execution of `jobId` with `hold: true` wait until {@link release}. */
  gate(jobId: string): Promise<void> {
    let gate = this.gates.get(jobId);
    if (!gate) {
      let release = () => {};
      const promise = new Promise<void>((resolve) => {
        release = resolve;
      });
      gate = { promise, release };
      this.gates.set(jobId, gate);
    }
    return gate.promise;
  }

  release(jobId: string): void {
    void this.gate(jobId);
    this.gates.get(jobId)?.release();
  }

  /** Resolves when `predicate` holds (checked at every tracker change and every 50 ms). */
  async waitFor(predicate: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.listeners.delete(done);
          resolve();
        };
        const timer = setTimeout(done, 50);
        this.listeners.add(done);
      });
    }
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/**
 * What a probe execution does. Attempt numbers are `ctx.attempt`; failures are counted per job
 * over executions, so `failTimes: 2` means "the first two executions that get to the end fail",
 * however many attempts kills or takeovers used up.
 */
export const probePayload = z
  .object({
    /** Sleep this long (honouring the signal unless `ignoreSignal`). */
    sleepMs: z.int().min(0).max(600_000).optional(),
    /** The first `failTimes` executions that reach the end throw. */
    failTimes: z.int().min(0).max(100).optional(),
    /** Every execution throws. */
    alwaysFail: z.boolean().optional(),
    /** On these attempts, sleep far past the job type's timeout. */
    overrunOnAttempts: z.array(z.int().min(1)).optional(),
    /** Keep running when the signal fires (a badly behaved handler). */
    ignoreSignal: z.boolean().optional(),
    /** On these attempts the worker dies `killAfterMs` into the handler (needs dead zones). */
    killOnAttempts: z.array(z.int().min(1)).optional(),
    killAfterMs: z.int().min(0).max(60_000).optional(),
    /** On these attempts, wait for `tracker.release(jobId)` before going on. */
    holdOnAttempts: z.array(z.int().min(1)).optional(),
    /** The hold of `holdOnAttempts` also ends when the signal fires (then the execution is aborted). */
    holdAbortable: z.boolean().optional(),
    /** Durable steps (`ctx.step('s<i>')`) each execution runs first, before anything else. */
    steps: z.int().min(0).max(5).optional(),
    /** On a kill attempt, the worker dies after this many steps (@default all of them). */
    killAfterSteps: z.int().min(0).max(5).optional(),
    /** Free-form tag echoed in the result. */
    tag: z.string().max(100).optional(),
    /** The tenant a job runs for (a fair limit's `fairBy`). */
    tenant: z.string().max(100).optional(),
  })
  .strict();
export type ProbePayload = z.output<typeof probePayload>;

export interface ProbeJobOptions {
  type: string;
  tracker: ProbeTracker;
  /** @default 5_000 */
  timeoutMs?: number;
  /** @default 3 */
  maxAttempts?: number;
  /** @default constant 100 ms */
  backoff?: BackoffInput;
  /** Needed for `killOnAttempts`: the kill ends the dead zone the handler runs in. */
  deadZones?: DeadZones;
  /**
   * A killed handler stops this long after its kill at the latest, as its process's own timer
   * would (a type whose timeout is long for held handlers still frees its invocation soon).
   * @default until the runtime aborts it (its timeout)
   */
  killedStopsAfterMs?: number;
  /** Record `onFailure` calls in the tracker. @default true */
  onFailure?: boolean;
  /** Concurrency limits of the probe type (keys usually from `tag`). @default none */
  concurrency?: ConcurrencyLimit<ProbePayload>[];
  /** Priorities for its lines (needs `concurrency` or a singleton). @default none */
  priority?: PriorityOptions;
  /** Other flow control of the probe type (keys usually from `tag`). @default none */
  flow?: Pick<JobTypeOptions<typeof probePayload>, 'singleton' | 'throttle' | 'rateLimit' | 'debounce'>;
  /** Events the probe type subscribes to (its payload is the event's data). @default none */
  on?: readonly Subscription[];
}

/** Waits `ms`, or until `signal` fires (then throws its reason), unless `ignoreSignal`. */
async function sleepFor(ms: number, signal: AbortSignal, ignoreSignal: boolean): Promise<void> {
  if (ignoreSignal) {
    await delay(ms);
    return;
  }
  await delay(ms, undefined, { signal }).catch((error: unknown) => {
    throw signal.aborted ? signal.reason : error;
  });
}

/** Waits for `gate`, or until `signal` fires (then throws its reason). */
async function holdOrAbort(gate: Promise<void>, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([gate, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

function reasonOf(signal: AbortSignal): string {
  const reason = signal.reason as { name?: string } | undefined;
  return reason?.name ?? String(reason);
}

/**
 * A probe job type (spec + handler). The result is `{ attempt, execution, tag }`, so tests can
 * tell which attempt's result was stored.
 *
 * @example
 * const tracker = new ProbeTracker();
 * const probe = probeJob({ type: 'probe', tracker, timeoutMs: 2_000, maxAttempts: 3 });
 * const platform = await startLocalPlatform({ aws, prefix, jobs: [probe] });
 */
export function probeJob(options: ProbeJobOptions): JobDefinition {
  const { tracker } = options;
  const spec = defineJobType({
    type: options.type,
    payload: probePayload,
    timeoutMs: options.timeoutMs ?? 5_000,
    retry: {
      maxAttempts: options.maxAttempts ?? 3,
      backoff: options.backoff ?? { kind: 'constant', delayMs: 100 },
    },
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    ...(options.priority ? { priority: options.priority } : {}),
    ...(options.on ? { on: options.on } : {}),
    ...options.flow,
  });
  const run = async (payload: ProbePayload, ctx: JobContext) => {
    const execution = tracker.start(ctx.jobId, ctx.attempt);
    const previousFailures = tracker.count(ctx.jobId, 'failed');
    try {
      const killing = payload.killOnAttempts?.includes(ctx.attempt) ?? false;
      const steps = killing ? Math.min(payload.steps ?? 0, payload.killAfterSteps ?? 5) : (payload.steps ?? 0);
      for (let i = 0; i < steps; i++) {
        const recorded = await ctx.step(`s${i}`, async () => {
          const stepRun = tracker.stepBegin(ctx.jobId, i);
          await sleepFor(5, ctx.signal, false);
          tracker.stepEnd(stepRun);
          return { by: stepRun.id };
        });
        tracker.stepResult(ctx.jobId, i, recorded.by);
      }
      if (killing) {
        if (!options.deadZones) throw new Error('probe: killOnAttempts needs deadZones');
        await sleepFor(payload.killAfterMs ?? 0, ctx.signal, false);
        options.deadZones.killCurrent();
        tracker.end(execution, 'killed');
        // The process is gone: this handler never returns a result. Wait for the runtime's
        // own timer to fire (it cannot reach AWS any more), then stop.
        await new Promise<void>((resolve) => {
          ctx.signal.addEventListener('abort', () => resolve(), { once: true });
          if (options.killedStopsAfterMs !== undefined) setTimeout(resolve, options.killedStopsAfterMs);
        });
        throw new Error('killed worker: handler stopped without a result');
      }
      if (payload.holdOnAttempts?.includes(ctx.attempt)) {
        if (payload.holdAbortable) await holdOrAbort(tracker.gate(ctx.jobId), ctx.signal);
        else await tracker.gate(ctx.jobId);
      }
      if (payload.overrunOnAttempts?.includes(ctx.attempt)) {
        await sleepFor(spec.timeoutMs * 2, ctx.signal, payload.ignoreSignal ?? false);
      }
      if (payload.sleepMs) await sleepFor(payload.sleepMs, ctx.signal, payload.ignoreSignal ?? false);
      if (payload.alwaysFail || previousFailures < (payload.failTimes ?? 0)) {
        tracker.end(execution, 'failed');
        throw new Error(`probe: planned failure on attempt ${ctx.attempt}`);
      }
      tracker.end(execution, 'completed');
      return {
        attempt: ctx.attempt,
        execution: tracker.count(ctx.jobId),
        ...(payload.tag ? { tag: payload.tag } : {}),
      };
    } catch (error) {
      tracker.end(
        execution,
        ctx.signal.aborted ? 'aborted' : 'failed',
        ctx.signal.aborted ? reasonOf(ctx.signal) : undefined,
      );
      throw error;
    }
  };
  const definition = defineJob(spec, run, {
    ...(options.onFailure === false
      ? {}
      : {
          onFailure: async (_payload: ProbePayload, info: FailureInfo) => tracker.recordFailureHook(info.jobId, info),
        }),
  });
  // The runtime treats every definition as taking `unknown` payloads (it validates them itself).
  return definition as unknown as JobDefinition;
}
