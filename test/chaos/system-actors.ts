/**
 * The users of the system chaos run, all through the typed client (shared/client) with short
 * timeouts and retries: producers (single and batch enqueue, retried with the same ids),
 * controllers (cancel, then retry, of jobs in any state), DLQ redrives, recurring schedules;
 * and what AWS does besides: duplicate deliveries of job messages.
 */
import { createClient, OrreryApiError, type OrreryClient } from '../../shared/client/index';
import type { BatchResult } from '../../shared/client/types';
import { SETTLED_STATES } from '../../shared/core/states';
import type { ProbeTracker } from '../support/probes';
import type { SystemObserver } from './system-observer';
import type { PlannedJob, PlannedSchedule } from './system-plan';
import type { World } from './system-world';

/** Counts of what the actors did. */
export interface ActorStats {
  enqueueCalls: number;
  enqueueRetries: number;
  enqueueErrors: Record<string, number>;
  acknowledged: number;
  notAcknowledged: number;
  batchCalls: number;
  /** `POST /flows` calls, and flows acknowledged. */
  flowCalls: number;
  flowsAcknowledged: number;
  /** `POST /events` calls. */
  eventCalls: number;
  cancels: Record<string, number>;
  cancelAnswers: Record<string, number>;
  retries: Record<string, number>;
  retryAnswers: Record<string, number>;
  reruns: Record<string, number>;
  rerunAnswers: Record<string, number>;
  dlqCopies: number;
  redriveCalls: number;
  redriveAnswers: Record<string, number>;
  redriveMoved: number;
  duplicatesSent: number;
  schedulesCreated: number;
  scheduleErrors: number;
  /**
   * The waits of aimed cancels and planned lines for their job's state (real ms): how many, the
   * longest, and how many ran out at AIM_WAIT_MS (then the action goes ahead as it is), and which.
   */
  aimWaits: { count: number; longestMs: number; runOut: number; runOutOf: string[] };
}

/** Settings of the actors. */
export interface ActorOptions {
  /** Time limit per HTTP attempt of the client (short: API latency faults exceed it). */
  clientTimeoutMs: number;
  /** Concurrent producers. */
  producers: number;
  /** Application-level retries (same id) after the client gave up. */
  enqueueTries: number;
  /** The typed client's own retries per call. @default 3 */
  clientRetries?: number;
  /**
   * The probes' tracker: a cancel aimed at a running attempt waits until its handler runs (the
   * plan holds it there), then releases it once the cancel was answered.
   */
  tracker?: ProbeTracker;
  /**
   * Called once every follower of a planned line has arrived: its holders are let go when the
   * promise it returns settles (an operator changes the key's limit meanwhile). @default at once
   */
  holdLine?: (holders: readonly PlannedJob[]) => Promise<void> | undefined;
  /** Awaited before a single job's first enqueue try (an event waiter's event sent before it exists). @default nothing */
  beforeEnqueue?: (job: PlannedJob) => Promise<void>;
  /** Told of a job's first acknowledgement (an event waiter's events are sent then). @default nothing */
  onAcknowledged?: (job: PlannedJob) => void;
}

const bump = (record: Record<string, number>, key: string) => {
  record[key] = (record[key] ?? 0) + 1;
};

function errorKey(error: unknown): string {
  if (error instanceof OrreryApiError) return String(error.status);
  return error instanceof Error ? error.name : 'unknown';
}

/**
 * How long an aimed cancel or a planned line waits at most for its job to reach the aimed state,
 * and how often it looks. The plan holds the job there once it is, so only the start is waited
 * for: a first attempt due now, which starts within seconds even on a loaded machine (the small
 * run's longest wait on 2 cores beside a CPU-heavy job is in its report, `aimWaits`). Bounded so
 * that a job that never gets there (its enqueue not acknowledged until late) cannot hold the
 * run's real-time phase: the actors' pending actions keep it from settling.
 */
const AIM_WAIT_MS = 30_000;
const AIM_POLL_MS = 150;
/** Tries of one operator action (cancel, retry) that got no answer, a 5xx or a 429. */
const ACTION_TRIES = 4;

/** Marker of the job-message copies this run puts into a DLQ (they stay valid job messages). */
export const DLQ_COPY_MARK = 'chaos-dlq-copy';

/** The producers, controllers and redrivers of one run. */
export class Actors {
  readonly stats: ActorStats = {
    enqueueCalls: 0,
    enqueueRetries: 0,
    enqueueErrors: {},
    acknowledged: 0,
    notAcknowledged: 0,
    batchCalls: 0,
    flowCalls: 0,
    flowsAcknowledged: 0,
    eventCalls: 0,
    cancels: {},
    cancelAnswers: {},
    retries: {},
    retryAnswers: {},
    reruns: {},
    rerunAnswers: {},
    dlqCopies: 0,
    redriveCalls: 0,
    redriveAnswers: {},
    redriveMoved: 0,
    duplicatesSent: 0,
    schedulesCreated: 0,
    scheduleErrors: 0,
    aimWaits: { count: 0, longestMs: 0, runOut: 0, runOutOf: [] },
  };
  /** Schedules whose creation was acknowledged. */
  readonly schedules: PlannedSchedule[] = [];
  /** Every 2xx answer to a `POST /events`, by event id: the job ids it named (invariant 20). */
  readonly eventAnswers = new Map<string, string[][]>();
  /** HTTP attempts the typed client made, calls made through it, and attempts it timed out. */
  readonly http = { attempts: 0, calls: 0, timeouts: 0 };
  private readonly client: OrreryClient;
  /**
   * For `POST /flows`: a flow writes its jobs level by level, so it gets four times the timeout
   * of a single enqueue (a client of a flow API would allow for that too). Replays still meet it.
   */
  private readonly flowClient: OrreryClient;
  /** A client with a long timeout, for reads that explain what a control call met. */
  private readonly reader: OrreryClient;
  private readonly timers = new Set<NodeJS.Timeout>();
  private pendingActions = 0;

  constructor(
    private readonly world: World,
    private readonly observer: SystemObserver,
    private readonly options: ActorOptions,
  ) {
    const http = this.http;
    const counting: typeof fetch = async (url, init) => {
      http.attempts += 1;
      try {
        return await fetch(url, init);
      } catch (error) {
        if (init?.signal?.aborted) http.timeouts += 1;
        throw error;
      }
    };
    this.client = createClient({
      url: world.platform.url,
      fetch: counting,
      timeoutMs: options.clientTimeoutMs,
      retry: { retries: options.clientRetries ?? 3, baseDelayMs: 50, maxDelayMs: 500 },
    });
    this.flowClient = createClient({
      url: world.platform.url,
      fetch: counting,
      timeoutMs: options.clientTimeoutMs * 4,
      retry: { retries: options.clientRetries ?? 3, baseDelayMs: 50, maxDelayMs: 500 },
    });
    this.reader = createClient({ url: world.platform.url, timeoutMs: 30_000 });
  }

  /** Actions still scheduled or running. */
  get busy(): number {
    return this.pendingActions;
  }

  /** Creates the recurring schedules (retried with the same name until acknowledged). */
  async createSchedules(planned: PlannedSchedule[]): Promise<void> {
    await Promise.all(
      planned.map(async (s) => {
        for (let tries = 0; tries < this.options.enqueueTries; tries++) {
          try {
            await this.client.schedules.create({
              name: s.name,
              type: s.type,
              payload: s.payload as Record<string, unknown>,
              rate: s.rate,
              overlap: s.overlap,
              maxAttempts: s.maxAttempts,
            });
            this.stats.schedulesCreated += 1;
            this.schedules.push(s);
            return;
          } catch {
            this.stats.scheduleErrors += 1;
            await sleep(200 + tries * 200);
          }
        }
      }),
    );
  }

  /** Enqueues every planned job (singles and batches of up to 10, flows whole) with `producers` in parallel. */
  async produce(jobs: PlannedJob[]): Promise<void> {
    const units: PlannedJob[][] = [];
    let batch: PlannedJob[] = [];
    const flows = new Map<string, PlannedJob[]>();
    const bursts = new Map<string, PlannedJob[]>();
    const lines = new Map<string, PlannedJob[][]>();
    const events = new Map<string, PlannedJob[]>();
    // a line's holders are sent by the line itself, so their hold starts with it
    const holderIds = new Set(jobs.flatMap((j) => j.arrival?.holders ?? []));
    const holderJobs = new Map(jobs.filter((j) => holderIds.has(j.id)).map((j) => [j.id, j]));
    for (const job of jobs) {
      if (holderJobs.has(job.id)) continue;
      if (job.arrival !== undefined) {
        const key = job.arrival.holders.join(' ');
        const stages = lines.get(key) ?? [];
        stages[job.arrival.stage] = [...(stages[job.arrival.stage] ?? []), job];
        lines.set(key, stages);
        continue;
      }
      if (job.together !== undefined) {
        const burst = bursts.get(job.together) ?? [];
        if (burst.length === 0) units.push(burst);
        burst.push(job);
        bursts.set(job.together, burst);
        continue;
      }
      // an event's jobs (one per subscriber) are made by one POST /events
      if (job.event !== undefined) {
        const made = events.get(job.event.id) ?? [];
        if (made.length === 0) units.push(made);
        made.push(job);
        events.set(job.event.id, made);
        continue;
      }
      if (job.flow !== undefined) {
        const flow = flows.get(job.flow) ?? [];
        if (flow.length === 0) units.push(flow);
        flow.push(job);
        flows.set(job.flow, flow);
        continue;
      }
      if (job.via === 'single') units.push([job]);
      else {
        batch.push(job);
        if (batch.length === 10) {
          units.push(batch);
          batch = [];
        }
      }
    }
    if (batch.length > 0) units.push(batch);
    for (const [key, stages] of lines) {
      const held = key.split(' ').flatMap((id) => holderJobs.get(id) ?? []);
      this.later(0, () => this.line(held, stages));
    }
    let next = 0;
    await Promise.all(
      Array.from({ length: this.options.producers }, async () => {
        while (next < units.length) {
          const unit = units[next++];
          if (!unit) continue;
          if (unit[0]?.flow !== undefined) await this.createFlow(unit);
          else if (unit[0]?.event !== undefined) await this.sendEvent(unit);
          else if (unit.length === 1 && unit[0]?.via === 'single') await this.enqueueSingle(unit[0]);
          else await this.enqueueBatch(unit);
        }
      }),
    );
  }

  /**
   * A planned line: its holders are sent (in one batch call); once every holder's handler runs
   * (each holds its first attempt), each stage's followers are sent in one batch call and awaited
   * until they have arrived (see awaitArrival); then the holders are released (once `holdLine`
   * lets them go). A batch call may be answered late, or never, under the API's faults, with its
   * jobs created all the same (a small run's followers arrived at once and their call went
   * unanswered for 50 s): each call's jobs are awaited side by side with it, not after its
   * answer. Every wait of its own is bounded by {@link AIM_WAIT_MS}.
   */
  private async line(holders: PlannedJob[], stages: PlannedJob[][]): Promise<void> {
    const tracker = this.options.tracker;
    const calls: Promise<void>[] = [];
    try {
      calls.push(this.enqueueBatch(holders));
      if (tracker) await Promise.all(holders.map((holder) => this.awaitHandler(tracker, holder.id)));
      for (const stage of stages) {
        if (!stage || stage.length === 0) continue;
        calls.push(this.enqueueBatch(stage));
        await Promise.all(stage.map((job) => this.awaitArrival(job.id)));
      }
      await this.options.holdLine?.(holders);
    } finally {
      for (const holder of holders) tracker?.release(holder.id);
    }
    await Promise.all(calls);
  }

  /**
   * Polls until the job has arrived at its held key: it waits in line, has ended (skipped), or its
   * handler ran; or until `AIM_WAIT_MS` has passed. (A job claimed but not yet through its gate
   * is `running` for a moment: not arrived yet.) Its own log line of the wait is looked at at
   * every look, the store now and then only, and never waited on (see stateReader).
   */
  private async awaitArrival(id: string): Promise<void> {
    // held too: nothing moves it on until an operator does
    const terminal = SETTLED_STATES as readonly string[];
    const state = this.stateReader(id);
    await this.waitUntil(`${id} arrival`, (look) => {
      if ((this.options.tracker?.jobs.get(id)?.executions.length ?? 0) > 0) return true;
      if (this.observer.logs.get(id)?.some((l) => l.message === 'waiting for a concurrency slot')) return true;
      const now = state(look % 4 === 3);
      return now === 'waiting' || (now !== undefined && terminal.includes(now));
    });
  }

  /**
   * The job's state as last read: a read is started in the background when `ask` and none is in
   * flight, so that a look never waits on one (under the API's faults a read can take seconds,
   * while the tracker and the job's own log lines tell at once).
   */
  private stateReader(id: string): (ask: boolean) => string | undefined {
    let last: string | undefined;
    let reading = false;
    return (ask) => {
      if (ask && !reading) {
        reading = true;
        void this.stateOf(id).then((state) => {
          last = state;
          reading = false;
        });
      }
      return last;
    };
  }

  /** Polls `reached` every AIM_POLL_MS until it holds or AIM_WAIT_MS has passed; counted in `aimWaits`. */
  private async waitUntil(what: string, reached: (look: number) => Promise<boolean> | boolean): Promise<void> {
    const began = Date.now();
    const waits = this.stats.aimWaits;
    waits.count += 1;
    try {
      for (let look = 0; Date.now() < began + AIM_WAIT_MS; look++) {
        if (await reached(look)) return;
        await sleep(AIM_POLL_MS);
      }
      waits.runOut += 1;
      waits.runOutOf.push(what);
    } finally {
      waits.longestMs = Math.max(waits.longestMs, Date.now() - began);
    }
  }

  private requestOf(job: PlannedJob, runAt: string | undefined) {
    return {
      id: job.id,
      maxAttempts: job.maxAttempts,
      backoff: job.backoff,
      ...(job.priority !== undefined ? { priority: job.priority } : {}),
      ...(job.delaySeconds !== undefined ? { delaySeconds: job.delaySeconds } : {}),
      ...(runAt !== undefined ? { runAt } : {}),
    };
  }

  private runAtOf(job: PlannedJob): string | undefined {
    return job.runAtOffsetMs !== undefined
      ? new Date(this.world.driven.now() + job.runAtOffsetMs).toISOString()
      : undefined;
  }

  private async enqueueSingle(job: PlannedJob): Promise<void> {
    await this.options.beforeEnqueue?.(job);
    const runAt = this.runAtOf(job);
    for (let tries = 0; tries < this.options.enqueueTries; tries++) {
      if (tries > 0) this.stats.enqueueRetries += 1;
      this.stats.enqueueCalls += 1;
      this.http.calls += 1;
      try {
        const out = await this.client.enqueue(
          job.type,
          job.payload as Record<string, unknown>,
          this.requestOf(job, runAt),
        );
        this.acked(job, out.created ? 201 : 200, 'enqueue');
        return;
      } catch (error) {
        bump(this.stats.enqueueErrors, errorKey(error));
        this.observer.note(job.id, `enqueue try ${tries + 1} failed: ${errorKey(error)}`);
        if (error instanceof OrreryApiError && error.status < 500 && error.status !== 429) break;
        await sleep(100 + tries * 100);
      }
    }
    this.stats.notAcknowledged += 1;
  }

  /**
   * Sends a planned event (`POST /events`), retried with the same event id until answered 2xx:
   * each answer is noted (invariant 20), and the jobs it names are acknowledged.
   */
  private async sendEvent(jobs: PlannedJob[]): Promise<void> {
    const first = jobs[0];
    const event = first?.event;
    if (!first || !event) return;
    for (let tries = 0; tries < this.options.enqueueTries; tries++) {
      if (tries > 0) this.stats.enqueueRetries += 1;
      this.stats.eventCalls += 1;
      this.http.calls += 1;
      try {
        const out = await this.client.sendEvent(event.name, first.payload as Record<string, unknown>, { id: event.id });
        const named = out.jobs.map((j) => j.id);
        this.eventAnswers.set(event.id, [...(this.eventAnswers.get(event.id) ?? []), named]);
        for (const job of jobs) {
          const made = out.jobs.find((j) => j.id === job.id);
          if (made) this.acked(job, made.status === 'created' ? 201 : 200, 'event');
        }
        return;
      } catch (error) {
        bump(this.stats.enqueueErrors, `event:${errorKey(error)}`);
        for (const job of jobs)
          this.observer.note(job.id, `event ${event.id} try ${tries + 1} failed: ${errorKey(error)}`);
        if (error instanceof OrreryApiError && error.status < 500 && error.status !== 429) break;
        await sleep(100 + tries * 100);
      }
    }
    this.stats.notAcknowledged += jobs.length;
  }

  /**
   * `GET /events/{id}` of each event (read again on a failure, under the API's faults): the ids
   * of the jobs listed under its name, or why every read failed.
   */
  async readEvents(
    events: readonly { id: string; name: string }[],
  ): Promise<Map<string, string[] | { error: string }>> {
    const out = new Map<string, string[] | { error: string }>();
    for (const event of events) {
      let last = 'not read';
      for (let tries = 0; tries < 5 && !out.has(event.id); tries++) {
        try {
          const found = await this.reader.getEvent(event.id);
          out.set(
            event.id,
            found.jobs.filter((j) => j.name === event.name).map((j) => j.id),
          );
        } catch (error) {
          last = errorKey(error);
          await sleep(200 + tries * 200);
        }
      }
      if (!out.has(event.id)) out.set(event.id, { error: last });
    }
    return out;
  }

  /** Creates a planned flow whole (`POST /flows`), retried with the same flow and job ids until acknowledged. */
  private async createFlow(jobs: PlannedJob[]): Promise<void> {
    const id = jobs[0]?.flow ?? 'flow';
    for (let tries = 0; tries < this.options.enqueueTries; tries++) {
      if (tries > 0) this.stats.enqueueRetries += 1;
      this.stats.flowCalls += 1;
      this.http.calls += 1;
      try {
        const out = await this.flowClient.createFlow(
          jobs.map((j) => ({
            id: j.id,
            type: j.type,
            payload: j.payload as Record<string, unknown>,
            maxAttempts: j.maxAttempts,
            backoff: j.backoff,
            ...(j.dependsOn ? { dependsOn: j.dependsOn } : {}),
          })),
          { id },
        );
        for (const job of jobs) this.acked(job, out.created ? 201 : 200, 'flow');
        this.stats.flowsAcknowledged += 1;
        return;
      } catch (error) {
        bump(this.stats.enqueueErrors, `flow:${errorKey(error)}`);
        for (const job of jobs) this.observer.note(job.id, `flow ${id} try ${tries + 1} failed: ${errorKey(error)}`);
        if (error instanceof OrreryApiError && error.status < 500 && error.status !== 429) break;
        await sleep(100 + tries * 100);
      }
    }
    this.stats.notAcknowledged += jobs.length;
  }

  private async enqueueBatch(jobs: PlannedJob[]): Promise<void> {
    const runAts = new Map(jobs.map((j) => [j.id, this.runAtOf(j)]));
    let left = jobs;
    for (let tries = 0; tries < this.options.enqueueTries && left.length > 0; tries++) {
      if (tries > 0) this.stats.enqueueRetries += 1;
      this.stats.batchCalls += 1;
      this.http.calls += 1;
      let results: BatchResult[];
      try {
        results = await this.client.enqueueBatch(
          left.map((j) => ({
            type: j.type,
            payload: j.payload as Record<string, unknown>,
            ...this.requestOf(j, runAts.get(j.id)),
          })),
        );
      } catch (error) {
        bump(this.stats.enqueueErrors, `batch:${errorKey(error)}`);
        await sleep(100 + tries * 100);
        continue;
      }
      const again: PlannedJob[] = [];
      left.forEach((job, i) => {
        const result = results[i];
        if (result?.status === 'created' || result?.status === 'existing') {
          this.acked(job, result.status === 'created' ? 201 : 200, 'batch');
        } else {
          bump(this.stats.enqueueErrors, `batch-item:${result?.error.code ?? 'missing'}`);
          this.observer.note(job.id, `batch item failed: ${result?.error.code ?? 'missing'}`);
          again.push(job);
        }
      });
      left = again;
      if (left.length > 0) await sleep(100 + tries * 100);
    }
    this.stats.notAcknowledged += left.length;
  }

  /** The job was acknowledged: schedule what the plan does to it afterwards. */
  private acked(job: PlannedJob, status: number, via: string): void {
    const first = !this.observer.acks.has(job.id);
    this.observer.acknowledge(job.id, status, via);
    if (!first) return;
    this.stats.acknowledged += 1;
    this.options.onAcknowledged?.(job);
    const queueUrl = this.world.platform.config.routes[job.type]?.queueUrl ?? '';
    const message = JSON.stringify({ v: 1, id: job.id, type: job.type });
    for (const afterMs of job.duplicates) {
      this.later(afterMs, async () => {
        await this.world.sendRaw(queueUrl, message);
        this.stats.duplicatesSent += 1;
        this.observer.note(job.id, 'duplicate message sent');
      });
    }
    if (job.control) {
      const { cancelAfterMs, retryAfterMs, aim } = job.control;
      this.later(cancelAfterMs, async () => {
        const tracker = this.options.tracker;
        if (aim === 'running' && tracker && job.payload.holdOnAttempts) {
          // Its handler holds until released or aborted: cancel while it does, then let the
          // cancel abort it (or its timeout, when the cancel was not applied).
          await this.awaitHandler(tracker, job.id);
          try {
            await this.cancel(job.id);
            await tracker.waitFor(() => (tracker.jobs.get(job.id)?.running ?? 0) === 0, AIM_WAIT_MS).catch(() => {});
          } finally {
            tracker.release(job.id);
          }
        } else {
          if (aim !== undefined) await this.awaitState(job.id, aim);
          await this.cancel(job.id);
        }
        const fromStep = job.control?.rerunFromStep;
        if (retryAfterMs !== undefined) {
          this.later(retryAfterMs, () => (fromStep !== undefined ? this.rerun(job.id, fromStep) : this.retry(job.id)));
        }
      });
    }
    if (job.dlqCopyAfterMs !== undefined) {
      const dlqUrl = this.world.platform.deployment.queues[job.type]?.dlqUrl ?? '';
      this.later(job.dlqCopyAfterMs, async () => {
        const copy = JSON.stringify({ v: 1, id: job.id, type: job.type, mark: DLQ_COPY_MARK });
        await this.world.sendRaw(dlqUrl, copy);
        this.stats.dlqCopies += 1;
        this.observer.note(job.id, 'copy of its message put into the DLQ');
        this.later(200 + Math.floor(Math.random() * 1500), () => this.redrive(job.type));
      });
    }
  }

  private async stateOf(id: string): Promise<string> {
    try {
      return (await this.reader.get(id)).state;
    } catch (error) {
      return `get:${errorKey(error)}`;
    }
  }

  /**
   * Polls until the job is in `state`, has finished, or `AIM_WAIT_MS` has passed (on a slow
   * machine the first attempt may not have started, or failed, by the planned moment).
   */
  private async awaitState(id: string, state: string): Promise<void> {
    await this.waitUntil(`${id} ${state}`, async () => {
      const now = await this.stateOf(id);
      return now === state || (SETTLED_STATES as readonly string[]).includes(now);
    });
  }

  /** Waits until a handler of the job runs, the job has finished, or `AIM_WAIT_MS` has passed. */
  private async awaitHandler(tracker: ProbeTracker, id: string): Promise<void> {
    const state = this.stateReader(id);
    await this.waitUntil(`${id} handler`, (look) => {
      if ((tracker.jobs.get(id)?.running ?? 0) > 0) return true;
      // the store is asked now and then only: the tracker sees the handler start at once
      const now = state(look % 10 === 9);
      return now !== undefined && (SETTLED_STATES as readonly string[]).includes(now);
    });
  }

  private async cancel(id: string): Promise<void> {
    const state = await this.stateOf(id);
    bump(this.stats.cancels, state);
    const answer = await this.untilAnswered(() => this.client.cancel(id));
    bump(this.stats.cancelAnswers, answer);
    if (answer === '200') this.observer.acknowledge(id, 200, 'cancel');
    this.observer.note(
      id,
      answer === '200' ? `cancel acknowledged (was ${state})` : `cancel answered ${answer} (was ${state})`,
    );
  }

  private async retry(id: string): Promise<void> {
    const state = await this.stateOf(id);
    bump(this.stats.retries, state);
    const answer = await this.untilAnswered(() => this.client.retry(id));
    bump(this.stats.retryAnswers, answer);
    if (answer === '200') this.observer.acknowledge(id, 200, 'retry');
    this.observer.note(
      id,
      answer === '200' ? `retry acknowledged (was ${state}): a new series` : `retry answered ${answer} (was ${state})`,
    );
  }

  /** `POST /jobs/{id}/rerun` from a step (a job cancelled moments ago, its attempt perhaps still stopping). */
  private async rerun(id: string, fromStep: string): Promise<void> {
    const state = await this.stateOf(id);
    bump(this.stats.reruns, state);
    let code: string | undefined;
    let answer = await this.untilAnswered(() =>
      this.client.rerun(id, { fromStep }).catch((error: unknown) => {
        if (error instanceof OrreryApiError) code = error.code;
        throw error;
      }),
    );
    if (answer === '400' && code === 'unknown_step') {
      // cancelled before it recorded that step (nothing written): rerun it from the start
      this.observer.rerunsFromStart.add(id);
      answer = await this.untilAnswered(() => this.client.rerun(id));
    }
    bump(this.stats.rerunAnswers, answer);
    if (answer === '200') this.observer.acknowledge(id, 200, 'rerun');
    this.observer.note(
      id,
      answer === '200'
        ? `rerun from ${fromStep} acknowledged (was ${state}): a new series`
        : `rerun from ${fromStep} answered ${answer} (was ${state})`,
    );
  }

  /**
   * Calls an operator action until the API answers it (as an operator would: a call that got no
   * answer, a 5xx or a 429 is sent again, up to ACTION_TRIES times); '200' or the last error.
   * On a loaded machine the API can answer slower than the client's timeout for a while.
   */
  private async untilAnswered(call: () => Promise<unknown>): Promise<string> {
    let answer = 'none';
    for (let tries = 0; tries < ACTION_TRIES; tries++) {
      try {
        await call();
        return '200';
      } catch (error) {
        answer = errorKey(error);
        if (error instanceof OrreryApiError && error.status < 500 && error.status !== 429) return answer;
        await sleep(200 + tries * 300);
      }
    }
    return answer;
  }

  /** `POST /dlq/redrive` for a type; also used at the end of the run. */
  async redrive(type: string): Promise<void> {
    this.stats.redriveCalls += 1;
    try {
      const out = await this.client.dlq.redrive(type);
      bump(this.stats.redriveAnswers, out.method);
      if (out.method === 'receive-send') this.stats.redriveMoved += (out as { moved?: number }).moved ?? 0;
    } catch (error) {
      bump(this.stats.redriveAnswers, errorKey(error));
    }
  }

  private later(ms: number, fn: () => Promise<void>): void {
    this.pendingActions += 1;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn()
        .catch(() => undefined)
        .finally(() => {
          this.pendingActions -= 1;
        });
    }, ms);
    this.timers.add(timer);
  }

  /** Cancels every timer (end of the run). */
  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
