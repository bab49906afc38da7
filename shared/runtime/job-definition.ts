import type { z } from 'zod';
import type { AwsClients } from '../aws/clients';
import type { PlatformConfig } from '../config';
import type { Clock } from '../core/clock';
import type { EventSender } from '../core/events';
import type { AttemptError } from '../core/job';
import type { JobTypeSpec, PayloadSchema, SignalSchemas, WorkerPort } from '../core/job-type';
import type { JobState } from '../core/states';
import type { Logger } from '../logger';
import type { AnySignals, WorkflowSteps } from './workflow';

/**
 * What a handler gets besides its payload. Besides the fields below, its durable steps, sleeps
 * and signal waits ({@link WorkflowSteps}: `step`, `sleep`, `waitForSignal`). `Signals` are the
 * job type's declared signals, which type `waitForSignal` (see `defineJob`).
 */
export interface JobContext<Signals extends SignalSchemas = AnySignals> extends WorkflowSteps<Signals> {
  jobId: string;
  type: string;
  /** 1-based number of this attempt. */
  attempt: number;
  maxAttempts: number;
  /** When this job (or this retry) was due, ISO 8601. */
  scheduledAt: string;
  /**
   * Aborts when the attempt ends before the handler does: it times out (reason: a
   * `JobTimeoutError`), the lease is lost (another worker took over, or the job was cancelled:
   * a `LeaseLostError`), or a sleep or signal wait ends the attempt (a `Suspension`: the job
   * waits, and no work of this attempt may run on beside the next one). Pass it to fetch /
   * timers and stop work when it fires: the worker waits up to a heartbeat interval for the
   * handler to stop before it records the attempt, and logs a warning when it does not.
   * @example
   * await Promise.all([ctx.sleep('cool-off', '2h'), warmCache({ signal: ctx.signal })]);
   */
  signal: AbortSignal;
  /** Logger with `jobId`, `type` and `attempt` on every line. */
  log: Logger;
  /**
   * Reports progress (0–100, with an optional detail of up to 200 chars), shown on
   * `GET /jobs/{id}`. Cheap to call often: writes are throttled to one every 2 s (the first at
   * once, later ones coalesced to the newest), each one conditional `UpdateItem` of the job's
   * status item. Returns at once; throws a `RangeError` outside 0–100.
   */
  progress(percent: number, detail?: string): void;
  /**
   * The job's parents (`dependsOn`) by id, each with its state and result (`null` when it has
   * none); `{}` for a job without parents. Read only when called: the job's parents item, then
   * the parents' status items in one batch read. Rejects with a `ConfigError` when the worker was
   * built without a job graph (`createWorker`'s `graph`; `defineJob`'s Lambda entry and the local
   * platform always have one).
   * @example
   * const parcels = Object.values(await ctx.parents()).map((p) => p.result);
   */
  parents(): Promise<Record<string, { state: JobState; result: unknown }>>;
}

/** A job's handler: `Result` is what it returns (stored as JSON), `Signals` its type's declared signals. */
export type JobHandler<Payload, Result = unknown, Signals extends SignalSchemas = AnySignals> = (
  payload: Payload,
  ctx: JobContext<Signals>,
) => Promise<Result>;

/** Passed to `onFailure` once, after the last attempt failed. */
export interface FailureInfo {
  jobId: string;
  type: string;
  attempts: number;
  errors: AttemptError[];
}

export interface JobOptions<Payload> {
  /**
   * Called once when the job fails for good. It gets at most {@link ON_FAILURE_TIMEOUT_MS};
   * its own errors are logged and never retried.
   */
  onFailure?: (payload: Payload, info: FailureInfo) => Promise<void>;
  /**
   * What `ctx.emit` sends through in the deployed worker: `eventsFrom(catalog)` (from
   * `orrery-jobs/runtime`), with the specs of the types that subscribe to the events it sends.
   * @default none: `ctx.emit` fails the job (StepUsageError)
   */
  events?: EventSenderFactory;
  /**
   * The code version written on each journal entry this handler records, and named when a replay
   * diverges (docs/workflows.md, "Changing code safely"): a release name such as `"v42"`, at
   * most 64 characters.
   * @default `<AWS_LAMBDA_FUNCTION_VERSION>:<hash of the handler's source>` (see `codeVersionOf`)
   */
  version?: string;
}

/**
 * Builds a worker's event sender from its Lambda runtime (configuration, SDK clients, logger)
 * and the clock; `type` is the worker's job type (the emitted jobs' `enqueuedBy` names it).
 */
export type EventSenderFactory = (
  runtime: { config: PlatformConfig; clients: AwsClients; logger: Logger; clock: Clock },
  type: string,
) => EventSender;

export const ON_FAILURE_TIMEOUT_MS = 5_000;

/** The spec's signals of a definition: {@link AnySignals} reads as the spec's own default. */
type SpecSignals<Signals extends SignalSchemas> = 0 extends 1 & Signals ? SignalSchemas : Signals;

/**
 * A job type with its handler: what the worker runs. Its type parameters keep what the spec and
 * the handler say (the type name, the declared signals, the handler's result), so a client built
 * with definitions types each job's `result` (see `createClient`).
 */
export interface JobDefinition<
  Schema extends PayloadSchema = PayloadSchema,
  Type extends string = string,
  Signals extends SignalSchemas = AnySignals,
  Result = unknown,
  /** The worker ports its spec needs (see `JobTypeSpec`'s `Needs`). */
  Needs extends WorkerPort = never,
> {
  readonly spec: JobTypeSpec<Schema, Type, SpecSignals<Signals>, Needs>;
  // Method syntax: a definition for a specific schema stays assignable to `JobDefinition`
  // (lists of job types of different payloads), while callers still get the precise type.
  run(payload: z.output<Schema>, ctx: JobContext<Signals>): Promise<Result>;
  onFailure?(payload: z.output<Schema>, info: FailureInfo): Promise<void>;
  /** The code version its journal entries record (`JobOptions.version`). @default derived from the handler's source */
  readonly version?: string;
}
