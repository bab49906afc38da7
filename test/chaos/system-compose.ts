/**
 * Composition in the system chaos run: `ctx.invoke`, `ctx.waitForEvent` and batch handlers,
 * beside the run's other jobs and under its faults (the API's, the workers', duplicate messages,
 * DLQ copies, clock jumps; kills of invoked children).
 *
 * A small share of the first plain type's jobs (due now, succeeding, with nothing else planned on
 * them: no cancel, burst, line, flow, event, kill, steps or tag), chosen from their ids (not a
 * draw: the rest of a seed's plan stays the same), becomes one of three units, in turn:
 * - **invoke**: a job of {@link COMPOSE_TYPE} whose handler invokes 2 or 3 children of the first
 *   plain type (a probe type) in one `Promise.all`: `k0` succeeds (killed on its first attempt in
 *   every second unit), `k1` fails for good, `k2` (when there is one) succeeds. Each child's
 *   payload carries a tag naming its parent and name (`<parent>|<name>`), which its result gives
 *   back, so the stored jobs say which invoke made them without the run deriving their ids.
 * - **wait**: a job of {@link COMPOSE_TYPE} that waits for {@link MATCH_EVENT} matching its id
 *   (`data.key`). Before it is enqueued, an event on its key is sent (and answered): it must never
 *   be returned. Once it is acknowledged, an event on another key is sent, and, in every second
 *   unit, an event on its key (at once, or 1.5 s later: before its wait or during it), which must
 *   be returned; without one, the wait times out (an hour of driven time: a jump ends it).
 * - **batch**: a job of {@link BATCH_TYPE}, whose batch handler gets up to 10 jobs per call; in
 *   every third unit its first answer is a failure, so it is retried alone. The batch items are
 *   enqueued together in one batch call, so that one handler call gets several.
 *
 * Invariants 21 to 23 (system-checks.ts), checked here by pure functions over what the handlers,
 * the actors and the workers' stores recorded (see {@link checkInvokes}, {@link checkEventWaits},
 * {@link checkBatchItems}).
 */
import { z } from 'zod';
import { createClient, type OrreryClient } from '../../shared/client/index';
import type { Clock } from '../../shared/core/clock';
import { jobDueAt } from '../../shared/core/due';
import { defineEvent } from '../../shared/core/events';
import type { Job } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { isTerminal } from '../../shared/core/states';
import { fnv1a } from '../../shared/core/table';
import { InvokedJobFailedError, PermanentError } from '../../shared/errors';
import type { BatchJobDefinition } from '../../shared/runtime/batch-worker';
import { defineBatchJob } from '../../shared/runtime/define-batch-job';
import { defineJob } from '../../shared/runtime/define-job';
import type { JobContext, JobDefinition } from '../../shared/runtime/job-definition';
import { Suspension } from '../../shared/runtime/workflow';
import { type ProbePayload, type ProbeTracker, probePayload } from '../support/probes';
import { type PlannedJob, plainAndDueNow } from './system-plan';

/** The type of the invoking parents and of the event waiters. */
export const COMPOSE_TYPE = 'sys-cmp';
/** The batch type: a batch handler of up to 10 jobs per call. */
export const BATCH_TYPE = 'sys-bat';
/** The event the waiters wait for, on `data.key` (their job id). No type subscribes: it makes no job. */
export const MATCH_EVENT = defineEvent('sys.match', z.object({ key: z.string(), token: z.string() }), {
  matchOn: ['key'],
});

export type ComposeKind = 'invoke' | 'wait' | 'batch';
/** The burst the batch items are enqueued in: one batch call. */
export const COMPOSE_BATCH = 'compose-batch';
const KINDS: readonly ComposeKind[] = ['invoke', 'wait', 'batch'];

/** One child an invoking parent starts. */
export interface PlannedChild {
  name: string;
  /** `<parent id>|<name>`: its payload's tag, given back in its result. */
  tag: string;
  payload: ProbePayload;
  /** It fails on every attempt (the parent's invoke throws InvokedJobFailedError). */
  fails: boolean;
}

/** One unit of composition: a planned job turned into a parent, a waiter or a batch item. */
export interface PlannedComposition {
  jobId: string;
  kind: ComposeKind;
  /** `invoke`: the children, invoked together. */
  children?: PlannedChild[];
  /** `wait`: its timeout, and whether an event on its key is sent once it is acknowledged, after how long (real ms). */
  wait?: { timeoutMs: number; matched: boolean; afterMs: number };
  /** `batch`: its first answer from the batch handler is a failure. */
  failFirst?: boolean;
}

const HOUR = 3600_000;

/**
 * Turns a share of the first plain type's eligible jobs into units of composition (see the file's
 * comment), at least `min` of them (the lowest hashes, when the share gives fewer), kinds in turn
 * in plan order. Each keeps its id, its messages' duplicates and DLQ copy; it takes the type's
 * retry policy (3 attempts, 300 ms apart). Returns the units; `jobs` is changed in place.
 *
 * @example
 * const units = planCompositions(plan.jobs, { childType: 'sys-a', share: 0.1, min: 6 });
 */
export function planCompositions(
  jobs: PlannedJob[],
  options: { childType: string; share: number; min: number },
): PlannedComposition[] {
  const eligible = jobs.filter(
    (job) =>
      plainAndDueNow(job, options.childType) &&
      job.dependsOn === undefined &&
      job.event === undefined &&
      !job.payload.killOnAttempts?.length &&
      !job.payload.overrunOnAttempts?.length &&
      !job.payload.steps &&
      !job.payload.failTimes &&
      !job.payload.alwaysFail,
  );
  if (options.share <= 0 && options.min <= 0) return [];
  const score = (job: PlannedJob) => (fnv1a(`compose:${job.id}`) % 1000) / 1000;
  let chosen = new Set(eligible.filter((job) => score(job) < options.share));
  if (chosen.size < options.min) {
    const lowest = [...eligible].sort((a, b) => score(a) - score(b) || (a.id < b.id ? -1 : 1));
    chosen = new Set(lowest.slice(0, options.min));
  }
  const units: PlannedComposition[] = [];
  const count: Record<ComposeKind, number> = { invoke: 0, wait: 0, batch: 0 };
  for (const job of eligible) {
    if (!chosen.has(job)) continue;
    const kind = KINDS[units.length % KINDS.length] ?? 'invoke';
    const n = count[kind]++;
    const unit: PlannedComposition = { jobId: job.id, kind };
    if (kind === 'invoke') {
      const size = 2 + (fnv1a(`children:${job.id}`) % 2);
      unit.children = Array.from({ length: size }, (_, i) => {
        const name = `k${i}`;
        const tag = `${job.id}|${name}`;
        const fails = i === 1;
        const killed = i === 0 && n % 2 === 1;
        return {
          name,
          tag,
          fails,
          payload: {
            sleepMs: 20,
            tag,
            ...(fails ? { alwaysFail: true } : {}),
            ...(killed ? { killOnAttempts: [1], killAfterMs: 0 } : {}),
          },
        };
      });
    } else if (kind === 'wait') {
      const matched = n % 2 === 0;
      unit.wait = { timeoutMs: matched ? 3 * HOUR : HOUR, matched, afterMs: n % 4 === 0 ? 0 : 1500 };
    } else {
      unit.failFirst = n % 3 === 0;
      // the run's batch items are enqueued together, in one batch call, so that a handler call
      // gets several of them (one failing while the others succeed, retried alone)
      job.together = COMPOSE_BATCH;
    }
    Object.assign(job, {
      type: kind === 'batch' ? BATCH_TYPE : COMPOSE_TYPE,
      maxAttempts: 3,
      backoff: { kind: 'constant', delayMs: 300 },
      backoffKind: 'short',
    } satisfies Partial<PlannedJob>);
    units.push(unit);
  }
  return units;
}

/** What an invoke gave the parent: the child's result, or the InvokedJobFailedError it threw. */
export type InvokeSeen =
  | { ok: true; result: unknown }
  | { ok: false; error: string; childId?: string; childState?: string };

/** What an invoking parent's handler saw. */
export interface InvokeRecord {
  /** Real ms its handler first called its invokes. */
  reached?: number;
  /** Each execution that got past its invokes: its start (real and driven ms) and what each invoke gave. */
  resumes: { startedAt: number; drivenAt: number; outcomes: Record<string, InvokeSeen> }[];
}

/** What a waiter's handler saw (driven ms). */
export interface WaitRecord {
  /** When its handler first reached the wait. */
  reached: number;
  timeoutMs: number;
  /** What the wait returned, once per execution that got past it. */
  returns: ({ id: string; data: unknown } | null)[];
}

/** One run of a batch item in the batch handler. */
export interface BatchRun {
  attempt: number;
  /** Real ms of the handler call. */
  startedAt: number;
  answered: 'ok' | 'fail';
}

/** An event the run sent to the waiters, by its id. */
export interface SentRecord {
  key: string;
  /** Driven ms of its first try. */
  firstTriedAt: number;
  /** Driven ms of its first 2xx answer; undefined when never answered. */
  answeredAt?: number;
}

/** The composition types' handlers, and what they record. */
export class ComposeRecords {
  readonly invokes = new Map<string, InvokeRecord>();
  readonly waits = new Map<string, WaitRecord>();
  readonly batchRuns = new Map<string, BatchRun[]>();
  /** Batch handler calls, and the items of the largest. */
  readonly batchCalls = { calls: 0, largest: 0 };
  private readonly units: Map<string, PlannedComposition>;

  constructor(
    units: readonly PlannedComposition[],
    private readonly childType: string,
  ) {
    this.units = new Map(units.map((u) => [u.jobId, u]));
  }

  /** The parents' and waiters' type. Its executions go to `tracker` too (invariant 2 covers them). */
  definition(tracker: ProbeTracker, driven: Clock, timeoutMs: number): JobDefinition {
    const spec = defineJobType({
      type: COMPOSE_TYPE,
      payload: probePayload,
      timeoutMs,
      retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 300 } },
      waitsFor: [MATCH_EVENT],
    });
    const run = async (_payload: ProbePayload, ctx: JobContext) => {
      const execution = tracker.start(ctx.jobId, ctx.attempt);
      const drivenAt = driven.now();
      try {
        const unit = this.units.get(ctx.jobId);
        let result: unknown;
        if (unit?.kind === 'invoke') {
          const record = this.invokes.get(ctx.jobId) ?? { resumes: [] };
          this.invokes.set(ctx.jobId, record);
          record.reached ??= Date.now();
          const children = unit.children ?? [];
          const seen = await Promise.all(
            children.map((child) =>
              ctx.invoke(child.name, this.childType, child.payload, { maxAttempts: 3 }).then(
                (value): InvokeSeen => ({ ok: true, result: value }),
                (error: unknown): InvokeSeen => {
                  if (!(error instanceof InvokedJobFailedError)) throw error;
                  return { ok: false, error: error.name, childId: error.childId, childState: error.childState };
                },
              ),
            ),
          );
          record.resumes.push({
            startedAt: execution.startedAt,
            drivenAt,
            outcomes: Object.fromEntries(children.map((child, i) => [child.name, seen[i] as InvokeSeen])),
          });
          result = { children: seen.length };
        } else if (unit?.kind === 'wait' && unit.wait) {
          const record = this.waits.get(ctx.jobId) ?? {
            reached: driven.now(),
            timeoutMs: unit.wait.timeoutMs,
            returns: [],
          };
          this.waits.set(ctx.jobId, record);
          const got = await ctx.waitForEvent(MATCH_EVENT, {
            match: { 'data.key': ctx.jobId },
            timeout: unit.wait.timeoutMs,
          });
          record.returns.push(got === null ? null : { id: got.id, data: got.data });
          result = { got: got?.id ?? null };
        } else {
          throw new PermanentError(`no invoke or wait is planned for ${ctx.jobId}`);
        }
        tracker.end(execution, 'completed');
        return result;
      } catch (error) {
        tracker.end(execution, error instanceof Suspension || ctx.signal.aborted ? 'aborted' : 'failed');
        throw error;
      }
    };
    return defineJob(spec, run) as unknown as JobDefinition;
  }

  /** The batch type: one outcome per item, a failure for an item planned to fail first (on its first run). */
  batchDefinition(tracker: ProbeTracker, timeoutMs: number): BatchJobDefinition {
    const spec = defineJobType({
      type: BATCH_TYPE,
      payload: probePayload,
      timeoutMs,
      retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 300 } },
      batch: { maxSize: 10, maxWaitSeconds: 0 },
    });
    const definition = defineBatchJob(spec, async (items) => {
      this.batchCalls.calls += 1;
      this.batchCalls.largest = Math.max(this.batchCalls.largest, items.length);
      const executions = items.map((item) => tracker.start(item.jobId, item.attempt));
      // a moment in the call, so that runs of one item at once would overlap in the tracker
      await new Promise((resolve) => setTimeout(resolve, 20));
      return items.map((item, i) => {
        const runs = this.batchRuns.get(item.jobId) ?? [];
        this.batchRuns.set(item.jobId, runs);
        const fail = (this.units.get(item.jobId)?.failFirst ?? false) && runs.length === 0;
        runs.push({
          attempt: item.attempt,
          startedAt: executions[i]?.startedAt ?? Date.now(),
          answered: fail ? 'fail' : 'ok',
        });
        const execution = executions[i];
        if (execution) tracker.end(execution, item.signal.aborted ? 'aborted' : fail ? 'failed' : 'completed');
        return fail
          ? { ok: false as const, error: new Error(`planned failure of batch item ${item.jobId}`) }
          : { ok: true as const, result: { item: item.jobId, attempt: item.attempt } };
      });
    });
    return definition as unknown as BatchJobDefinition;
  }
}

/** Counts of what the composition actors did. */
export interface ComposeActorStats {
  eventsSent: number;
  eventsAnswered: number;
  eventTries: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Tries of one event send that got no answer, a 5xx or a 429. */
const TRIES = 8;

/**
 * The senders of the waiters' events: one on the waiter's key before its enqueue, one on another
 * key and (for a matched waiter) one on its key once it is acknowledged (see the file's comment).
 */
export class ComposeActors {
  readonly stats: ComposeActorStats = { eventsSent: 0, eventsAnswered: 0, eventTries: 0 };
  /** Every event sent, by its id. */
  readonly sent = new Map<string, SentRecord>();
  private pending = 0;
  private readonly client: OrreryClient;
  private readonly units: Map<string, PlannedComposition>;

  constructor(
    url: string,
    units: readonly PlannedComposition[],
    private readonly driven: Clock,
    options: { clientTimeoutMs: number },
  ) {
    this.units = new Map(units.map((u) => [u.jobId, u]));
    this.client = createClient({
      url,
      timeoutMs: options.clientTimeoutMs * 4,
      retry: { retries: 2, baseDelayMs: 50, maxDelayMs: 500 },
    });
  }

  /** Actions still running. */
  get busy(): number {
    return this.pending;
  }

  /** Before a waiter's enqueue: an event on its key, answered before the job exists (it must never be returned). */
  async beforeEnqueue(job: PlannedJob): Promise<void> {
    if (this.units.get(job.id)?.kind !== 'wait') return;
    this.pending += 1;
    try {
      await this.send(`b.${job.id}`, job.id, 'before');
      await sleep(5);
    } finally {
      this.pending -= 1;
    }
  }

  /** Once a waiter is acknowledged: an event on another key, and its own event when it is matched. */
  acknowledged(job: PlannedJob): void {
    const wait = this.units.get(job.id)?.wait;
    if (!wait) return;
    this.pending += 1;
    void (async () => {
      try {
        await this.send(`d.${job.id}`, `${job.id}~other`, 'decoy');
        if (!wait.matched) return;
        await sleep(wait.afterMs);
        await this.send(`a.${job.id}`, job.id, 'after');
      } finally {
        this.pending -= 1;
      }
    })();
  }

  private async send(id: string, key: string, token: string): Promise<void> {
    const record: SentRecord = { key, firstTriedAt: this.driven.now() };
    this.sent.set(id, record);
    this.stats.eventsSent += 1;
    for (let tries = 0; tries < TRIES; tries++) {
      this.stats.eventTries += 1;
      try {
        await this.client.sendEvent(MATCH_EVENT.name, { key, token }, { id });
        record.answeredAt = this.driven.now();
        this.stats.eventsAnswered += 1;
        return;
      } catch {
        await sleep(200 + tries * 300);
      }
    }
  }
}

/** A violation of one of invariants 21 to 23. */
export interface ComposeViolation {
  subject: string;
  detail: string;
}

/** What {@link checkInvokes} needs. */
export interface InvokesInput {
  planned: readonly PlannedComposition[];
  records: ReadonlyMap<string, InvokeRecord>;
  /** The stored jobs at the end. */
  stored: ReadonlyMap<string, Job>;
  /** Every handler execution (real ms), by job id: the children's, from the probe tracker. */
  executions: ReadonlyMap<string, readonly { startedAt: number; endedAt?: number }[]>;
  maxSkewMs: number;
  /** Driven time at the end: a child not yet due then (by the due index's rule) is pending, not lost. */
  finalNow: number;
}

/**
 * Invariant 21, per child of each parent that reached its invokes:
 * - it is created once per name: exactly one stored job carries its tag;
 * - it runs as any job does: it is terminal at the end (or not due yet);
 * - every execution of the parent that got past its invokes started after each child ended (its
 *   last handler execution ended before, in real time; its `finishedAt` before, on clocks up to
 *   the skew apart) and saw each child's outcome: a succeeded child's stored result, or an
 *   InvokedJobFailedError naming the child and its end state;
 * - a parent that succeeded got past its invokes.
 */
export function checkInvokes(input: InvokesInput): { checked: number; violations: ComposeViolation[] } {
  let checked = 0;
  const violations: ComposeViolation[] = [];
  const byTag = new Map<string, Job[]>();
  for (const job of input.stored.values()) {
    const tag = (job.payload as { tag?: unknown } | undefined)?.tag;
    if (typeof tag === 'string') byTag.set(tag, [...(byTag.get(tag) ?? []), job]);
  }
  const at = (ms: number) => new Date(ms).toISOString();
  for (const unit of input.planned) {
    if (unit.kind !== 'invoke') continue;
    const record = input.records.get(unit.jobId);
    if (record?.reached === undefined) continue;
    const parent = unit.jobId;
    const violate = (detail: string) => violations.push({ subject: parent, detail });
    const children = new Map<string, Job>();
    for (const child of unit.children ?? []) {
      checked += 1;
      const made = byTag.get(child.tag) ?? [];
      if (made.length !== 1) {
        violate(
          made.length === 0
            ? `invoke "${child.name}" was called, but no job of it is stored`
            : `invoke "${child.name}" made ${made.length} jobs: ${made.map((j) => j.id).join(', ')}`,
        );
        continue;
      }
      const job = made[0] as Job;
      children.set(child.name, job);
      if (!isTerminal(job.state) && !((jobDueAt(job) ?? Number.NEGATIVE_INFINITY) > input.finalNow)) {
        violate(`its child ${job.id} ("${child.name}") is ${job.state} at the end (attempts ${job.attempts})`);
      }
    }
    for (const resume of record.resumes) {
      for (const child of unit.children ?? []) {
        const job = children.get(child.name);
        if (!job) continue;
        const seen = resume.outcomes[child.name];
        if (!isTerminal(job.state)) {
          violate(`resumed at ${at(resume.drivenAt)} past invoke "${child.name}", whose job ${job.id} is ${job.state}`);
          continue;
        }
        const running = (input.executions.get(job.id) ?? []).find(
          (e) => e.startedAt < resume.startedAt && (e.endedAt === undefined || e.endedAt > resume.startedAt),
        );
        const finished = job.finishedAt === undefined ? undefined : Date.parse(job.finishedAt);
        if (running) {
          violate(
            `resumed while its child ${job.id} ("${child.name}") still ran (an execution started before it, ended after)`,
          );
        } else if (finished !== undefined && resume.drivenAt < finished - 2 * input.maxSkewMs - 50) {
          violate(
            `resumed at ${at(resume.drivenAt)}, before its child ${job.id} ("${child.name}") ended at ${at(finished)}`,
          );
        }
        const problem =
          seen === undefined
            ? 'no outcome'
            : job.state === 'succeeded'
              ? seen.ok && canonical(seen.result) === canonical(job.result ?? null)
                ? undefined
                : `${JSON.stringify(seen)}, not its stored result ${JSON.stringify(job.result ?? null)}`
              : !seen.ok &&
                  seen.error === 'InvokedJobFailedError' &&
                  seen.childId === job.id &&
                  seen.childState === job.state
                ? undefined
                : `${JSON.stringify(seen)}, not an InvokedJobFailedError for ${job.id} ended ${job.state}`;
        if (problem) violate(`invoke "${child.name}" gave ${problem}`);
      }
    }
    if (input.stored.get(parent)?.state === 'succeeded' && record.resumes.length === 0) {
      violate('succeeded, but no execution of it got past its invokes');
    }
  }
  return { checked, violations };
}

/** JSON with every object's keys sorted: two reads of one value from two items may order them differently. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** What {@link checkEventWaits} needs. */
export interface EventWaitsInput {
  planned: readonly PlannedComposition[];
  records: ReadonlyMap<string, WaitRecord>;
  /** Every event sent to the waiters' keys (and decoys), by event id. */
  sent: ReadonlyMap<string, SentRecord>;
  /** The stored jobs at the end (their `createdAt` is the line an event must be sent after). */
  stored: ReadonlyMap<string, Job>;
  /** How long before a wait's deadline an event must have been answered to be owed to it (clocks' skew and more). */
  marginMs: number;
}

/**
 * Invariant 22, per waiter whose wait returned: every execution got the same; an event it got was
 * sent by the run on its own key (its data names its key) and was not answered before the job was
 * created; and a timeout is not returned while an event on its key, first tried after the job was
 * created, was answered before the wait's deadline (less `marginMs`).
 */
export function checkEventWaits(input: EventWaitsInput): { checked: number; violations: ComposeViolation[] } {
  let checked = 0;
  const violations: ComposeViolation[] = [];
  const byKey = new Map<string, [string, SentRecord][]>();
  for (const [id, sent] of input.sent) byKey.set(sent.key, [...(byKey.get(sent.key) ?? []), [id, sent]]);
  const at = (ms: number) => new Date(ms).toISOString();
  for (const unit of input.planned) {
    if (unit.kind !== 'wait') continue;
    const record = input.records.get(unit.jobId);
    const first = record?.returns[0];
    if (!record || first === undefined) continue;
    checked += 1;
    const key = unit.jobId;
    const violate = (detail: string) => violations.push({ subject: key, detail });
    const stored = input.stored.get(key);
    const created = stored ? Date.parse(stored.createdAt) : undefined;
    for (const later of record.returns.slice(1)) {
      if (canonical(later) !== canonical(first)) {
        violate(`its wait returned ${JSON.stringify(first)}, then ${JSON.stringify(later)} on a replay`);
        break;
      }
    }
    if (first !== null) {
      const dataKey = (first.data as { key?: unknown } | null)?.key;
      const sent = input.sent.get(first.id);
      if (dataKey !== key || (sent !== undefined && sent.key !== key)) {
        violate(`its wait returned event ${first.id} on key ${String(dataKey)}, not its own`);
      } else if (!sent) {
        violate(`its wait returned event ${first.id}, which the run never sent`);
      } else if (sent.answeredAt !== undefined && created !== undefined && sent.answeredAt < created) {
        violate(
          `its wait returned event ${first.id}, answered at ${at(sent.answeredAt)}, before the job was created at ${at(created)}`,
        );
      }
      continue;
    }
    if (created === undefined) continue;
    const deadline = record.reached + record.timeoutMs;
    for (const [id, sent] of byKey.get(key) ?? []) {
      if (sent.answeredAt === undefined || sent.firstTriedAt < created) continue;
      if (sent.answeredAt + input.marginMs < deadline) {
        violate(
          `its wait timed out (reached ${at(record.reached)}, timeout ${record.timeoutMs} ms), but event ${id} on its key was sent after its creation (${at(created)}) and answered at ${at(sent.answeredAt)}`,
        );
      }
    }
  }
  return { checked, violations };
}

/** An outcome write of a batch job's attempt that the store applied: its kind, the attempt's token, when it returned (real ms). */
export interface OutcomeWrite {
  kind: 'succeed' | 'retry' | 'fail';
  token: number;
  at: number;
}

/** What {@link checkBatchItems} needs. */
export interface BatchItemsInput {
  planned: readonly PlannedComposition[];
  runs: ReadonlyMap<string, readonly BatchRun[]>;
  writes: ReadonlyMap<string, readonly OutcomeWrite[]>;
  stored: ReadonlyMap<string, Job>;
}

/**
 * Invariant 23, per batch item the handler ran: no run of it starts after a write that ended it
 * (succeeded or failed) returned; its attempts' outcomes are recorded once (one kind per attempt's
 * token, and the end by one attempt only); and the stored job is in the state that end wrote.
 */
export function checkBatchItems(input: BatchItemsInput): { checked: number; violations: ComposeViolation[] } {
  let checked = 0;
  const violations: ComposeViolation[] = [];
  const at = (ms: number) => `+${ms} ms`;
  for (const unit of input.planned) {
    if (unit.kind !== 'batch') continue;
    const runs = input.runs.get(unit.jobId) ?? [];
    if (runs.length === 0) continue;
    checked += 1;
    const violate = (detail: string) => violations.push({ subject: unit.jobId, detail });
    const writes = [...(input.writes.get(unit.jobId) ?? [])].sort((a, b) => a.at - b.at);
    const ends = writes.filter((w) => w.kind !== 'retry');
    const end = ends[0];
    if (end) {
      const again = runs.filter((r) => r.startedAt > end.at);
      if (again.length > 0) {
        violate(
          `ran again (attempt ${again.map((r) => r.attempt).join(', ')}, ${again.length} time(s)) after its ${end.kind} was recorded at ${at(end.at)}`,
        );
      }
    }
    const kinds = new Map<number, Set<string>>();
    for (const w of writes) kinds.set(w.token, new Set([...(kinds.get(w.token) ?? []), w.kind]));
    for (const [token, set] of kinds) {
      if (set.size > 1) violate(`its attempt of token ${token} recorded ${[...set].join(' and ')}`);
    }
    const endTokens = new Set(ends.map((w) => w.token));
    if (endTokens.size > 1)
      violate(`its end was recorded by ${endTokens.size} attempts (tokens ${[...endTokens].join(', ')})`);
    const last = ends.at(-1);
    const state = input.stored.get(unit.jobId)?.state;
    const want = last?.kind === 'succeed' ? 'succeeded' : last?.kind === 'fail' ? 'failed' : undefined;
    if (want !== undefined && state !== want)
      violate(`its ${last?.kind} was recorded, but it is ${state ?? 'missing'} at the end`);
  }
  return { checked, violations };
}
