/**
 * What the system chaos run records beside the {@link ProbeTracker}: every claim (attempt,
 * series, runAt, token), every handler start on the driven clock with the `runAt` it was
 * started for, every `onFailure` call with its series, every acknowledged answer, and the
 * runtime's log lines per job (for violation stories).
 */
import type { Clock } from '../../shared/core/clock';
import type { Pacer } from '../../shared/core/pace';
import type { JobStore } from '../../shared/core/ports';
import type { BatchJobDefinition } from '../../shared/runtime/batch-worker';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { interceptStore } from '../support/faults';

/** A successful claim. */
export interface ClaimRecord {
  attempt: number;
  /** Manual retries before this claim: the series. */
  series: number;
  token: number;
  runAt: number;
  /** Driven time of the claim, by the claimer's clock. */
  at: number;
  owner: string;
}

/** A handler start. */
export interface StartRecord {
  attempt: number;
  series: number;
  /** `ctx.scheduledAt`: the job's runAt for this attempt. */
  runAt: number;
  /** Driven time (no skew) when the handler started. */
  drivenAt: number;
  realAt: number;
  /** Skew of the starting worker's clock. */
  skewMs: number;
}

/** How one acknowledged enqueue or control call went. */
export interface Ack {
  status: number;
  at: number;
  via: string;
}

/** A throttle turn, as the pacer gave it to a worker. */
export interface Turn {
  /** The turn (driven ms, from the worker's clock). */
  at: number;
  /** When the worker asked for it, and when it was given (real ms): a change of the key's pace between the two may or may not apply. */
  askedAt: number;
  givenAt: number;
  /** The job that took it (a line's turn). */
  jobId?: string;
}

/** A log line of the runtime about one job. */
export interface LogLine {
  t: number;
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

/** The run's records, keyed by job id. */
export class SystemObserver {
  readonly claims = new Map<string, ClaimRecord[]>();
  readonly starts = new Map<string, StartRecord[]>();
  readonly failureHooks = new Map<string, { series: number; at: number }[]>();
  readonly acks = new Map<string, Ack[]>();
  readonly logs = new Map<string, LogLine[]>();
  readonly logCounts = new Map<string, number>();
  readonly events = new Map<string, string[]>();
  /** Every throttle turn a worker was given, by pace scope and key (`<scope>|<key>`). */
  readonly turns = new Map<string, Turn[]>();
  /** Jobs rerun from the start, their planned step not recorded when they were cancelled. */
  readonly rerunsFromStart = new Set<string>();
  /** Every write that ended an attempt and that the store applied (it returned), with the attempt's token (invariant 23). */
  readonly outcomeWrites = new Map<string, { kind: 'succeed' | 'retry' | 'fail'; token: number; at: number }[]>();

  private push<T>(map: Map<string, T[]>, key: string, value: T): void {
    let list = map.get(key);
    if (!list) {
      list = [];
      map.set(key, list);
    }
    list.push(value);
  }

  /** Notes an event in a job's story (control calls, duplicate copies, DLQ copies). */
  note(jobId: string, text: string): void {
    this.push(this.events, jobId, `+${((Date.now() - this.t0) / 1000).toFixed(2)}s ${text}`);
  }

  constructor(readonly t0: number = Date.now()) {}

  /** Records an answer of 200/201 (or a batch item created/existing) that reached the producer. */
  acknowledge(jobId: string, status: number, via: string): void {
    this.push(this.acks, jobId, { status, at: Date.now(), via });
  }

  /** The series of the latest claim of `jobId` (0 when none seen). */
  currentSeries(jobId: string): number {
    return this.claims.get(jobId)?.at(-1)?.series ?? 0;
  }

  /** Wraps a job store so that every successful claim, and every write that ended an attempt, is recorded. */
  observeStore(store: JobStore): JobStore {
    const ended = (kind: 'succeed' | 'retry' | 'fail', job: { id: string; leaseToken: number }) =>
      this.push(this.outcomeWrites, job.id, { kind, token: job.leaseToken, at: Date.now() });
    return interceptStore(store, {
      succeed: async (original, input) => {
        const out = await original(input);
        ended('succeed', input.job);
        return out;
      },
      retry: async (original, input) => {
        await original(input);
        ended('retry', input.job);
      },
      fail: async (original, input) => {
        await original(input);
        ended('fail', input.job);
      },
      claim: async (original, input) => {
        const result = await original(input);
        if (result.kind === 'claimed') {
          const job = result.job;
          this.push(this.claims, job.id, {
            attempt: job.attempts,
            series: job.retries ?? 0,
            token: job.leaseToken,
            runAt: Date.parse(job.runAt),
            at: input.now,
            owner: input.owner,
          });
        }
        return result;
      },
    });
  }

  /** Wraps a pacer so that every throttle turn it gives is recorded. */
  observePacer(pacer: Pacer): Pacer {
    return {
      takeTurn: async (input) => {
        const askedAt = Date.now();
        const at = await pacer.takeTurn(input);
        this.push(this.turns, `${input.scope}|${input.key}`, { at, askedAt, givenAt: Date.now() });
        return at;
      },
      tryStart: (input) => pacer.tryStart(input),
      state: (input) => pacer.state(input),
      setPace: (input) => pacer.setPace(input),
      runtimePace: (input) => pacer.runtimePace(input),
      // a turn of a throttle's line is taken at the asker's `now`, when it is free
      lineTurn: async (input) => {
        const askedAt = Date.now();
        const turn = await pacer.lineTurn(input);
        if (turn.kind === 'go') {
          this.push(this.turns, `${input.scope}|${input.key}`, {
            at: input.now,
            askedAt,
            givenAt: Date.now(),
            jobId: input.job.jobId,
          });
        }
        return turn;
      },
      leaveLine: (input) => pacer.leaveLine(input),
      line: (input) => pacer.line(input),
    };
  }

  /**
   * Wraps a job definition (one per worker container): records each handler start against the
   * driven clock and each `onFailure` call with its series.
   */
  wrap(def: JobDefinition, driven: Clock, skewMs: number): JobDefinition {
    const onFailure = def.onFailure?.bind(def);
    return {
      spec: def.spec,
      run: (payload, ctx) => {
        const claim = [...(this.claims.get(ctx.jobId) ?? [])].reverse().find((c) => c.attempt === ctx.attempt);
        this.push(this.starts, ctx.jobId, {
          attempt: ctx.attempt,
          series: claim?.series ?? this.currentSeries(ctx.jobId),
          runAt: Date.parse(ctx.scheduledAt),
          drivenAt: driven.now(),
          realAt: Date.now(),
          skewMs,
        });
        return def.run(payload, ctx);
      },
      ...(onFailure
        ? {
            onFailure: (payload: unknown, info: Parameters<NonNullable<JobDefinition['onFailure']>>[1]) => {
              this.push(this.failureHooks, info.jobId, { series: this.currentSeries(info.jobId), at: Date.now() });
              return onFailure(payload, info);
            },
          }
        : {}),
    };
  }

  /** {@link wrap} for a batch definition: records each item's start, as a single job's. */
  wrapBatch(def: BatchJobDefinition, driven: Clock, skewMs: number): BatchJobDefinition {
    const onFailure = def.onFailure?.bind(def);
    return {
      spec: def.spec,
      runBatch: (items, ctx) => {
        for (const item of items) {
          const claim = [...(this.claims.get(item.jobId) ?? [])].reverse().find((c) => c.attempt === item.attempt);
          this.push(this.starts, item.jobId, {
            attempt: item.attempt,
            series: claim?.series ?? this.currentSeries(item.jobId),
            runAt: Date.parse(item.scheduledAt),
            drivenAt: driven.now(),
            realAt: Date.now(),
            skewMs,
          });
        }
        return def.runBatch(items, ctx);
      },
      ...(onFailure ? { onFailure } : {}),
    };
  }

  /** A log sink for `createLogger`: counts messages and keeps the lines about each job. */
  sink(line: string): void {
    const parsed = JSON.parse(line) as { message: string; level: string; jobId?: string; time?: string } & Record<
      string,
      unknown
    >;
    const { message, level, jobId, time: _time, ...fields } = parsed;
    this.logCounts.set(message, (this.logCounts.get(message) ?? 0) + 1);
    if (level === 'error' && this.errors.length < 40) {
      this.errors.push(
        `${message}: ${String(fields.errorMessage ?? fields.errorName ?? '')} ${String(fields.pk ?? jobId ?? '')}`,
      );
    }
    if (jobId) this.push(this.logs, jobId, { t: Date.now(), level, message, fields });
    // Fire handling (worker and supervisor) logs with the schedule's name: kept for its story.
    const schedule = fields.schedule;
    if (typeof schedule === 'string') {
      this.push(this.logs, `schedule:${schedule}`, { t: Date.now(), level, message, fields: { ...fields, jobId } });
    }
  }

  /** Count of log lines with this message. */
  /** The first error lines logged (message, error, subject), to say what went wrong. */
  readonly errors: string[] = [];

  logged(message: string): number {
    return this.logCounts.get(message) ?? 0;
  }
}
