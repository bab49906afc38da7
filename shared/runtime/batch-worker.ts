import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { z } from 'zod';
import type { BatchOptions } from '../core/batch';
import type { JobTypeSpec, PayloadSchema } from '../core/job-type';
import { ConfigError, PermanentError } from '../errors';
import { createLogger, type Logger } from '../logger';
import type { HandlerCall, WorkerDeps } from './delivery/kit';
import { STANDARD_GATES } from './gates';
import type { GateBuilder } from './gates/gate';
import type { FailureInfo, JobContext, JobDefinition } from './job-definition';
import { batchResponse, createDelivery } from './worker';

/** One job of a batch, as the batch handler gets it. */
export interface BatchItem<Payload = unknown> {
  jobId: string;
  /** The job's payload, parsed by the spec's schema. */
  payload: Payload;
  /** 1-based number of this job's attempt (each job counts its own). */
  attempt: number;
  maxAttempts: number;
  /** When this job (or this retry) was due, ISO 8601. */
  scheduledAt: string;
  /** Aborts when this job's attempt ends before the handler returns (its timeout, a lost lease). */
  signal: AbortSignal;
  /** Logger with this job's `jobId`, `type` and `attempt` on every line. */
  log: Logger;
  /** This job's progress (see `JobContext.progress`). */
  progress(percent: number, detail?: string): void;
}

/** What a batch handler gets besides its items. */
export interface BatchContext {
  type: string;
  /** The group's key value (`batch.key`), or undefined when the spec has no key. */
  key: string | undefined;
  /** Aborts once every item's signal has aborted: no outcome can be recorded any more. */
  signal: AbortSignal;
  log: Logger;
}

/** One item's outcome: its result (stored as the job's result), or the error its attempt failed with. */
export type BatchOutcome<Result = unknown> = { ok: true; result: Result } | { ok: false; error: unknown };

/**
 * A batch handler: gets the claimed jobs of one group and returns one outcome per item, in the
 * items' order. A throw fails every item's attempt with that error (each retried by its own policy).
 * The items array is frozen: the i-th outcome is the i-th item's, so an array sorted in place
 * would put outcomes on the wrong jobs (sort a copy: `[...items].sort(...)`, and answer in the
 * items' order).
 */
export type BatchHandler<Payload, Result = unknown> = (
  items: readonly BatchItem<Payload>[],
  ctx: BatchContext,
) => Promise<readonly BatchOutcome<Result>[]>;

/** A job type with a batch handler: what the batch worker runs. */
export interface BatchJobDefinition<
  Schema extends PayloadSchema = PayloadSchema,
  Type extends string = string,
  Result = unknown,
> {
  /** Its spec, with `batch` (checked by `defineBatchJob` and `createBatchWorker`). */
  readonly spec: JobTypeSpec<Schema, Type>;
  runBatch(items: readonly BatchItem<z.output<Schema>>[], ctx: BatchContext): Promise<readonly BatchOutcome<Result>[]>;
  onFailure?(payload: z.output<Schema>, info: FailureInfo): Promise<void>;
}

/** One claimed job waiting for its share of the handler call. */
interface Submission {
  record: SQSRecord;
  payload: unknown;
  ctx: JobContext;
  resolve(result: unknown): void;
  reject(error: unknown): void;
}

/**
 * Builds the SQS handler of a batch job type. Each record of the event goes through the same
 * pipeline as a single job's (parse → gates → claim → attempt → outcome, ./worker.ts), with its
 * own claim, lease keeper, timeout and recorded outcome; only the handler call is shared. A
 * record's pipeline that reaches its handler waits there; once every record of the event has
 * either reached it or is known not to (a claim refused: done, leased by another, not yet due,
 * out of attempts; a gate that held it; an invalid payload: counted out before the bookkeeping
 * that follows, such as an onFailure hook), the claimed jobs are grouped by `batch.key` and the handler
 * is called once per group, concurrently. Each item's outcome then ends its own attempt: a failed
 * item is retried alone (its message is listed in `batchItemFailures`), a succeeded one is done.
 *
 * @example
 * export const handler = createBatchWorker(sendEmails, { config, store, queue, scheduler });
 */
export function createBatchWorker(
  def: BatchJobDefinition,
  deps: WorkerDeps,
  gates: readonly GateBuilder[] = STANDARD_GATES,
): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  const batch = def.spec.batch as BatchOptions<unknown> | undefined;
  if (!batch) {
    throw new ConfigError(`job type "${def.spec.type}" has no batch settings: define its handler with defineJob`);
  }
  const rounds = new WeakMap<SQSRecord, Round>();
  const call: HandlerCall = (payload, ctx, record) => {
    const round = rounds.get(record);
    if (!round) return Promise.reject(new Error(`record ${record.messageId} is not part of a batch in progress`));
    return round.submit(record, payload, ctx);
  };
  // The per-record pipeline sees a definition whose own `run` is never called (`call` replaces it).
  const itemDef: JobDefinition = {
    spec: def.spec as JobTypeSpec,
    run: () => Promise.reject(new Error('a batch job runs through its batch handler')),
    ...(def.onFailure ? { onFailure: def.onFailure.bind(def) } : {}),
  };
  // A record that will not call the handler is counted out at once, before its bookkeeping (an
  // onFailure hook, a release): the claimed items' timeouts run while they wait.
  const noCall = (record: SQSRecord) => rounds.get(record)?.settled(record);
  const deliver = createDelivery(itemDef, deps, gates, call, noCall);
  const log = (deps.logger ?? createLogger({ level: deps.config.logLevel })).child({ type: def.spec.type });

  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const round = new Round(event.Records, (submissions) => runGroups(def, batch, submissions, log));
    for (const record of event.Records) rounds.set(record, round);
    const outcomes = await Promise.all(
      event.Records.map((record) => deliver(record).finally(() => round.settled(record))),
    );
    return batchResponse(event, outcomes);
  };
}

/**
 * One event's barrier: the handler is called once every record either submitted its claimed job
 * or is known not to (`settled`: told by the pipeline's `noCall`, or when its delivery ends). A
 * record is counted once, whichever comes first.
 */
class Round {
  private readonly pending: Set<SQSRecord>;
  private readonly submissions: Submission[] = [];
  private fired = false;

  constructor(
    records: readonly SQSRecord[],
    private readonly fire: (submissions: Submission[]) => Promise<void>,
  ) {
    this.pending = new Set(records);
  }

  submit(record: SQSRecord, payload: unknown, ctx: JobContext): Promise<unknown> {
    if (this.fired || !this.pending.has(record)) {
      return Promise.reject(new Error('the batch was already called when this job reached its handler'));
    }
    const submitted = new Promise<unknown>((resolve, reject) => {
      this.submissions.push({ record, payload, ctx, resolve, reject });
    });
    this.pending.delete(record);
    this.check();
    return submitted;
  }

  settled(record: SQSRecord): void {
    if (this.pending.delete(record)) this.check();
  }

  private check(): void {
    if (this.fired || this.pending.size > 0) return;
    this.fired = true;
    const submissions = this.submissions.splice(0);
    // `fire` settles every submission; should it fail itself, none may be left waiting (a settled
    // submission ignores the second answer).
    void this.fire(submissions).catch((error: unknown) => {
      for (const submission of submissions) submission.reject(error);
    });
  }
}

/** Groups the claimed jobs by key and calls the handler once per group; settles every submission. */
async function runGroups(
  def: BatchJobDefinition,
  batch: BatchOptions<unknown>,
  submissions: Submission[],
  log: Logger,
): Promise<void> {
  const groups = new Map<string | undefined, Submission[]>();
  for (const submission of submissions) {
    // An item aborted while it waited (timeout, lost lease) was recorded by its own attempt.
    if (submission.ctx.signal.aborted) {
      submission.reject(submission.ctx.signal.reason);
      continue;
    }
    let key: string | undefined;
    if (batch.key) {
      try {
        key = batch.key(submission.payload);
        if (typeof key !== 'string') throw new TypeError(`batch.key returned ${typeof key}, not a string`);
      } catch (error) {
        // the same payload gives the same key every time: retrying cannot help
        submission.reject(
          new PermanentError(`batch.key failed: ${error instanceof Error ? error.message : String(error)}`),
        );
        continue;
      }
    }
    const group = groups.get(key);
    if (group) group.push(submission);
    else groups.set(key, [submission]);
  }
  await Promise.all([...groups].map(([key, group]) => callGroup(def, key, group, log)));
}

async function callGroup(
  def: BatchJobDefinition,
  key: string | undefined,
  group: Submission[],
  log: Logger,
): Promise<void> {
  // Frozen: outcomes are matched to the jobs by position, which a sort in place would break.
  const items: readonly BatchItem[] = Object.freeze(
    group.map(({ payload, ctx }) => ({
      jobId: ctx.jobId,
      payload,
      attempt: ctx.attempt,
      maxAttempts: ctx.maxAttempts,
      scheduledAt: ctx.scheduledAt,
      signal: ctx.signal,
      log: ctx.log,
      progress: ctx.progress,
    })),
  );
  const controller = new AbortController();
  let open = group.length;
  for (const { ctx } of group) {
    const onAbort = () => {
      open -= 1;
      if (open === 0) controller.abort(ctx.signal.reason);
    };
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener('abort', onAbort, { once: true });
  }
  const ctx: BatchContext = {
    type: def.spec.type,
    key,
    signal: controller.signal,
    log: log.child({ batchSize: group.length, ...(key === undefined ? {} : { key }) }),
  };
  let outcomes: readonly BatchOutcome[];
  try {
    // Through a promise, so a handler that throws synchronously is caught like one that rejects.
    outcomes = await Promise.resolve().then(() => def.runBatch(items, ctx));
  } catch (error) {
    for (const submission of group) submission.reject(error);
    return;
  }
  const valid = Array.isArray(outcomes);
  if (!valid || outcomes.length !== group.length) {
    ctx.log.error('the batch handler must return one outcome per item, in order', {
      items: group.length,
      outcomes: valid ? outcomes.length : typeof outcomes,
    });
  }
  group.forEach((submission, i) => {
    const outcome = valid ? outcomes[i] : undefined;
    if (outcome === undefined || outcome === null || typeof outcome !== 'object') {
      submission.reject(new Error(`the batch handler returned no outcome for job ${submission.ctx.jobId}`));
    } else if (outcome.ok === true) submission.resolve(outcome.result);
    else if (outcome.ok === false) submission.reject(outcome.error);
    else submission.reject(new Error(`the batch handler's outcome for job ${submission.ctx.jobId} has no ok field`));
  });
}
