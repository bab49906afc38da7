import { randomUUID } from 'node:crypto';
import type { PlatformConfig } from '../config';
import type { TypeScope } from '../core/access';
import { refuseReferenceShape } from '../core/blobs';
import type { Clock } from '../core/clock';
import { CANCELLABLE_STATES, pastRetention, RERUNNABLE_STATES, RETRYABLE_STATES } from '../core/control';
import type { JobControl } from '../core/control-ports';
import { type JobGraph, needsRelease } from '../core/dependencies';
import { describeJob } from '../core/describe';
import { JOB_ID_PATTERN } from '../core/enqueue';
import { resolveFlowKeys, resolveSingletonKey } from '../core/flow';
import { type Job, type JobView, toView } from '../core/job';
import type { JobTypeSpec } from '../core/job-type';
import {
  cutJournal,
  invokeFloorOf,
  JOURNAL_RETENTION_DAYS,
  type Journal,
  type JournalCut,
  type JournalScope,
  journalScopeOf,
  RERUN_MARKER,
} from '../core/journal';
import { jsonBytes, MAX_PAYLOAD_BYTES } from '../core/limits';
import { fairQueueTypes } from '../core/message-group';
import { resolvePaceKey } from '../core/pace';
import { payloadHash } from '../core/payload-hash';
import { type JobQueue, type JobScheduler, type JobStore, retryScheduleName, wakeScheduleName } from '../core/ports';
import type { JobState } from '../core/states';
import { parseOrThrow } from '../core/validation';
import { dispatchNow } from '../dispatch/dispatch';
import { releaseDepsOf, releaseOrHandOff } from '../dispatch/release';
import { ConfigError, ConflictError, NotFoundError, PayloadTooLargeError, ValidationError } from '../errors';
import { errorFields, type Logger } from '../logger';
import { scopeRefusal } from './access';
import { rerunRequestSchema } from './schemas';

export interface ControlServiceDeps {
  config: PlatformConfig;
  catalog: readonly JobTypeSpec[];
  store: JobStore;
  control: JobControl;
  queue: JobQueue;
  scheduler: JobScheduler;
  clock: Clock;
  log: Logger;
  /** Job dependencies: a cancelled job's children are released by their policies. @default they are left waiting */
  graph?: JobGraph;
  /** Job journals: a rerun reads the job's and starts a new series of it. @default a rerun is refused (a deployment error) */
  journal?: Journal;
}

/** What `POST /jobs/{id}/rerun` takes (see {@link ControlService.rerun}). */
export interface RerunRequest {
  /** The recorded entry the rerun starts from. @default the start: nothing kept */
  fromStep?: string;
  /** A corrected payload. @default the job's payload */
  payload?: unknown;
}

/** How many kept entries a rerun copies at once. */
const COPY_CONCURRENCY = 16;

/**
 * The keys a job was given at enqueue instead of its payload's (`concurrencyKey`, `singletonKey`):
 * a stored key that its payload does not give (or cannot: the key function throws on it). The
 * concurrency override is the first keyed limit's, as `resolveFlowKeys` applies it.
 */
function givenKeys(spec: JobTypeSpec, job: Job): { concurrency?: string; singleton?: string } {
  const fromPayload = <T>(resolve: () => T): T | undefined => {
    try {
      return resolve();
    } catch {
      return undefined;
    }
  };
  const given: { concurrency?: string; singleton?: string } = {};
  const limits = spec.concurrency;
  if (limits && job.flowKeys) {
    const first = limits.findIndex((limit) => !limit.fairBy && limit.key);
    const stored = first >= 0 ? job.flowKeys[first] : undefined;
    if (stored !== undefined && fromPayload(() => resolveFlowKeys(limits, job.payload))?.[first] !== stored) {
      given.concurrency = stored;
    }
  }
  const singleton = spec.singleton;
  if (singleton?.key && job.singletonKey !== undefined) {
    if (fromPayload(() => resolveSingletonKey(singleton, job.payload)) !== job.singletonKey) {
      given.singleton = job.singletonKey;
    }
  }
  return given;
}

function illegalState(job: Pick<Job, 'id' | 'state'>, action: string, allowed: readonly JobState[]): ConflictError {
  return new ConflictError(
    `job ${job.id} is ${job.state}; only a job that is ${allowed.join(', ')} can be ${action}`,
    'illegal_state',
    { state: job.state, jobId: job.id },
  );
}

/** Who acts on a job through the API, and on which job types their grant lets them. */
export interface ControlActor {
  /** The caller's ARN: recorded on the job (`controls`) by the write. @default not recorded */
  by?: string;
  /**
   * The job types the caller's grant covers for this action. The write is conditioned on them,
   * so the access check's read of the job's type cannot be outrun (the job deleted and enqueued
   * again with another type in between): such a job is refused with a `ForbiddenError`.
   * @default every type
   */
  scope?: TypeScope;
}

/** The types a scope limits a write to (undefined: every type). */
function scopedTypes(scope: TypeScope | undefined): readonly string[] | undefined {
  if (!scope || scope.kind === 'all') return undefined;
  return scope.kind === 'some' ? [...scope.types] : [];
}

/** `POST /jobs/{id}/cancel`, `POST /jobs/{id}/retry` and `POST /jobs/{id}/rerun`. */
export class ControlService {
  private readonly specs: Map<string, JobTypeSpec>;
  /** The catalog's types whose messages carry an SQS message group. */
  private readonly fairQueues: ReadonlySet<string>;

  constructor(private readonly deps: ControlServiceDeps) {
    this.specs = new Map(deps.catalog.map((spec) => [spec.type, spec]));
    this.fairQueues = fairQueueTypes(deps.catalog);
  }

  private notFound(id: string): NotFoundError {
    return new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
  }

  /**
   * Cancels a job that has not finished (a held one too: its dependants are then released by their
   * edges' policies, as for any cancel). One conditional write on its state, with no read
   * before it; the item as it was comes back with the outcome. Then, for a job that was
   * scheduled (or retrying through a one-time schedule), the schedule is deleted (a message
   * that still arrives later is discarded by the worker, which treats a cancelled job as
   * finished). A running attempt's next fenced write (its heartbeat) fails, which aborts the
   * handler's signal; no retry follows.
   */
  async cancel(id: string, actor: ControlActor = {}): Promise<JobView> {
    if (!JOB_ID_PATTERN.test(id)) throw this.notFound(id);
    const { by } = actor;
    const types = scopedTypes(actor.scope);
    const now = this.deps.clock.now();
    const expiresAt = Math.floor(now / 1000) + this.deps.config.retentionDays * 86_400;
    const result = await this.deps.control.cancel({
      id,
      from: CANCELLABLE_STATES,
      now,
      expiresAt,
      ...(by !== undefined ? { by } : {}),
      ...(types !== undefined ? { types } : {}),
    });
    if (result.kind === 'missing') throw this.notFound(id);
    // A finished job past its retention is gone for callers, even before TTL deletes it.
    if (result.kind === 'refused' && pastRetention(result.job, now)) throw this.notFound(id);
    if (result.kind === 'refused') {
      const forbidden = scopeRefusal(actor, { action: 'control', control: 'cancel', types: [result.job.type] });
      if (forbidden) throw forbidden;
      await this.healRelease(result.job, now);
      throw illegalState(result.job, 'cancelled', CANCELLABLE_STATES);
    }

    const job = result.job;
    const log = this.deps.log.child({ jobId: id, type: job.type });
    // Best effort: a schedule left behind only sends a message the worker discards. A replay
    // (the first try applied, its response lost) does not know the state before: it tries both.
    const previous = result.previous;
    const schedules: string[] = [];
    if (!previous || previous.state === 'scheduled') schedules.push(id);
    if ((!previous || previous.state === 'retrying') && job.attempts > 0)
      schedules.push(retryScheduleName(id, job.attempts));
    // a long sleep or signal wait brings the job back through a schedule of its own
    if ((!previous || previous.state === 'waiting') && (job.resumes ?? 0) > 0)
      schedules.push(wakeScheduleName(id, job.resumes ?? 0));
    for (const name of schedules) {
      await this.deps.scheduler.deleteJobSchedule(name).catch((error: unknown) => {
        log.warn('could not delete the schedule of a cancelled job; its message will be discarded', {
          schedule: name,
          ...errorFields(error),
        });
      });
    }
    log.info('job cancelled', {
      ...(by !== undefined ? { by } : {}),
      previousState: previous?.state ?? 'unknown (replay)',
      ...describeJob(this.specs.get(job.type), job.payload),
    });
    // the job as the cancel left it says whether it has children: none, no read
    if (needsRelease(job)) await this.releaseCancelled(job, now, log);
    return toView(job);
  }

  /**
   * A refused cancel or retry found the job finished with its release not done (the call that
   * ended it died before it, and a job that waited, was scheduled or was cancelled while it
   * waited has no message to bring it back): the release is run here, before the 409, so a
   * client's retry of the call heals it. Never throws.
   */
  private async healRelease(job: Job, now: number): Promise<void> {
    if (!this.deps.graph || !needsRelease(job)) return;
    const log = this.deps.log.child({ jobId: job.id, type: job.type });
    log.warn('a finished job still had children to release; releasing them');
    await this.releaseCancelled(job, now, log);
  }

  /**
   * Releases a cancelled job's children by their policies, inline. When that fails, the job's
   * message is sent instead: its worker finds it finished and runs the release.
   */
  private async releaseCancelled(job: Job, now: number, log: Logger): Promise<void> {
    const graph = this.deps.graph;
    if (!graph) return;
    const deps = releaseDepsOf({
      config: this.deps.config,
      graph,
      queue: this.deps.queue,
      scheduler: this.deps.scheduler,
      fairQueues: this.fairQueues,
    });
    await releaseOrHandOff(deps, job, now, log);
  }

  /**
   * Retries a held, failed, cancelled (or expired) job of a deployed type as a new series of attempts:
   * one conditional write with no read before it (state queued, attempts 0, retries + 1, the
   * fencing token kept), then its message is sent. If the send fails, the write is undone (from
   * the item as it was, which the write returned) and the error returned, so the caller can retry.
   */
  async retry(id: string, actor: ControlActor = {}): Promise<JobView> {
    if (!JOB_ID_PATTERN.test(id)) throw this.notFound(id);
    const { by } = actor;
    const now = this.deps.clock.now();
    const scoped = scopedTypes(actor.scope);
    const deployed = Object.keys(this.deps.config.routes);
    const types = scoped === undefined ? deployed : deployed.filter((type) => scoped.includes(type));
    const result = await this.deps.control.restart({
      id,
      types,
      from: RETRYABLE_STATES,
      now,
      ...(by !== undefined ? { by } : {}),
    });
    if (result.kind === 'missing') throw this.notFound(id);
    if (result.kind === 'refused') {
      const job = result.job;
      if (pastRetention(job, now)) throw this.notFound(id);
      const forbidden = scopeRefusal(actor, { action: 'control', control: 'retry', types: [job.type] });
      if (forbidden) throw forbidden;
      await this.healRelease(job, now);
      if (!RETRYABLE_STATES.includes(job.state)) throw illegalState(job, 'retried', RETRYABLE_STATES);
      throw new ConflictError(`job type "${job.type}" is not deployed; job ${id} cannot run`, 'type_not_deployed', {
        jobId: id,
        state: job.state,
      });
    }
    const job = result.job;
    const log = this.deps.log.child({ jobId: id, type: job.type });
    try {
      // due at once (the restart's condition checked its type has a route)
      const via = { queue: this.deps.queue, routes: this.deps.config.routes, fairQueues: this.fairQueues };
      await dispatchNow(via, job, now);
    } catch (error) {
      // A replay (the first try applied, its response lost) has no state before to put back:
      // the retry stands, and the supervisor sends the job once it is overdue.
      const undone = result.previous
        ? await this.deps.control
            .undoRestart({ previous: result.previous, retries: job.retries ?? 1 })
            .catch(() => undefined)
        : false;
      log.error('could not send the message of a retried job', { undone: undone ?? 'unknown', ...errorFields(error) });
      // Refused: the restarted job moved on (another message of it was claimed), so the retry
      // took effect and stands; the supervisor re-sends it if it waits. Otherwise the caller
      // learns that nothing changed (undone) or must look (the undo's outcome is unknown).
      if (undone !== false) throw error;
      const current = await this.deps.store.get(id).catch(() => undefined);
      return toView(current ?? job);
    }
    log.info('job retried', {
      ...(by !== undefined ? { by } : {}),
      previousState: result.previous?.state ?? 'unknown (replay)',
      retries: job.retries,
      ...describeJob(this.specs.get(job.type), job.payload),
    });
    return toView(job);
  }

  /**
   * Runs a job that ended (failed, cancelled, expired or succeeded), or is held, again from a step: the same
   * job (id, incarnation, children and parents) in a new series of attempts, as
   * {@link retry} starts one, on a new series of its journal that holds copies of the entries
   * recorded before `fromStep` (none without it), and with the corrected payload when one is
   * given (validated as an enqueue's). A 400 (an unknown `fromStep`, a bad payload) or a 409 (a
   * job that may still run) writes nothing the job reads. A cancelled attempt that may still run
   * is fenced as for a retry: the rerun's first claim waits until its lease has passed, and what
   * it still records goes to the old series, which the rerun no longer reads.
   *
   * Costs one read of the job and one Query of its journal, then 1 write unit per kept entry (per
   * KB), 1 for a marker when the journal had invokes, the restart write (1, and 1 more for the
   * `byDue` entry it moves, as a retry's; 1 more `byTypeState` write for a failed, cancelled or
   * expired job), and a payload item when the corrected payload does not fit the status item.
   * @example
   * await control.rerun('order-1', { fromStep: 'charge', payload: { orderId: 'o-1', total: 42 } });
   */
  async rerun(id: string, body: unknown, actor: ControlActor = {}): Promise<JobView> {
    if (!JOB_ID_PATTERN.test(id)) throw this.notFound(id);
    const request = parseOrThrow(rerunRequestSchema, body ?? {}, { message: 'invalid rerun request' }) as RerunRequest;
    const journal = this.deps.journal;
    if (!journal) throw new ConfigError('this API was built without a journal: POST /jobs/{id}/rerun needs one');
    const { by } = actor;
    const now = this.deps.clock.now();
    const job = await this.deps.store.get(id);
    if (!job || pastRetention(job, now)) throw this.notFound(id);
    const forbidden = scopeRefusal(actor, { action: 'control', control: 'rerun', types: [job.type] });
    if (forbidden) throw forbidden;
    if (!RERUNNABLE_STATES.includes(job.state)) {
      await this.healRelease(job, now);
      throw illegalState(job, 'rerun', RERUNNABLE_STATES);
    }
    const spec = this.specs.get(job.type);
    if (!spec || !this.deps.config.routes[job.type]) {
      throw new ConflictError(`job type "${job.type}" is not deployed; job ${id} cannot run`, 'type_not_deployed', {
        jobId: id,
        state: job.state,
      });
    }
    const payload = request.payload === undefined ? undefined : this.correctedPayload(spec, job, request.payload);
    const cut = cutJournal(await journal.load(journalScopeOf(job)), request.fromStep);
    if (!cut) {
      throw new ValidationError(
        `job ${id} recorded no step, sleep, wait or invoke named ${JSON.stringify(request.fromStep)}`,
        [{ path: 'fromStep', message: "must name an entry of the job's journal" }],
        'unknown_step',
      );
    }
    // A series name no other rerun takes (its clock and a random part): two reruns at once write
    // to two series, and the write below lets one of them start.
    const reruns = (job.reruns ?? 0) + 1;
    const series = `r${reruns}.${now.toString(36)}${randomUUID().slice(0, 6)}`;
    await this.copyKept(journal, { ...journalScopeOf(job), series }, cut, now);
    const scoped = scopedTypes(actor.scope);
    const result = await this.deps.control.restart({
      id,
      type: job.type,
      ...(scoped !== undefined ? { types: scoped } : {}),
      from: RERUNNABLE_STATES,
      now,
      ...(by !== undefined ? { by } : {}),
      rerun: { seen: job, journal: series, ...(payload ? { payload } : {}) },
    });
    if (result.kind === 'missing') throw this.notFound(id);
    if (result.kind === 'refused') {
      // another call changed the job since it was read (a retry, a rerun, a new incarnation)
      const current = result.job;
      if (pastRetention(current, now)) throw this.notFound(id);
      if (!RERUNNABLE_STATES.includes(current.state)) throw illegalState(current, 'rerun', RERUNNABLE_STATES);
      throw new ConflictError(`job ${id} changed while it was being rerun; read it and try again`, 'job_changed', {
        jobId: id,
        state: current.state,
      });
    }
    const rerun = result.job;
    const log = this.deps.log.child({ jobId: id, type: rerun.type });
    try {
      const via = { queue: this.deps.queue, routes: this.deps.config.routes, fairQueues: this.fairQueues };
      await dispatchNow(via, rerun, now);
    } catch (error) {
      // The rerun stands (its journal series is the job's now): its due entry, 10 minutes on,
      // brings the supervisor, which sends it. No undo: a second rerun would cut the new series.
      log.error('could not send the message of a rerun job; the supervisor sends it once it is overdue', {
        ...errorFields(error),
      });
    }
    log.info('job rerun', {
      ...(by !== undefined ? { by } : {}),
      previousState: job.state,
      fromStep: request.fromStep ?? null,
      kept: cut.kept.length,
      dropped: cut.dropped,
      payloadChanged: payload !== undefined,
      series,
      ...describeJob(spec, rerun.payload),
    });
    return toView(rerun);
  }

  /**
   * A corrected payload, checked as an enqueue checks one (size, the type's schema), that must
   * give the keys the job was enqueued with: flow control placed it by them.
   */
  private correctedPayload(spec: JobTypeSpec, job: Job, value: unknown): { value: unknown; hash: string } {
    const size = jsonBytes(value);
    if (size > MAX_PAYLOAD_BYTES) {
      throw new PayloadTooLargeError(
        `payload is ${size} bytes of JSON; the limit is ${MAX_PAYLOAD_BYTES} bytes (it is stored in the job's DynamoDB item)`,
        MAX_PAYLOAD_BYTES,
      );
    }
    const parsed = parseOrThrow(spec.payload, value, {
      message: `payload does not match the ${spec.type} schema`,
      code: 'invalid_payload',
      prefix: 'payload',
    });
    // kept inline (a rerun's payload is not offloaded): one shaped like a reference would be read
    // back as the object it names (shared/core/blobs.ts), so it is refused
    refuseReferenceShape(parsed, 'payload');
    // a key the job was given at enqueue (`concurrencyKey`, `singletonKey`) stands for both payloads
    const given = givenKeys(spec, job);
    const keysOf = (payload: unknown) => {
      try {
        return JSON.stringify([
          spec.concurrency ? resolveFlowKeys(spec.concurrency, payload, given.concurrency) : null,
          spec.singleton ? resolveSingletonKey(spec.singleton, payload, given.singleton) : null,
          spec.throttle ? resolvePaceKey(spec.throttle, payload, 'throttle') : null,
        ]);
      } catch (error) {
        return error instanceof ValidationError ? error : undefined;
      }
    };
    const next = keysOf(parsed);
    if (next instanceof ValidationError) throw next;
    if (next !== keysOf(job.payload)) {
      throw new ValidationError(
        `the corrected payload gives other concurrency, singleton or throttle keys than job ${job.id} has`,
        [{ path: 'payload', message: 'must give the keys the job was enqueued with' }],
        'keys_changed',
      );
    }
    return { value: parsed, hash: payloadHash(spec.type, parsed) };
  }

  /**
   * Copies the entries a rerun keeps into the journal's new series, as they were recorded (value
   * and time), each kept two years from now as a new entry is; and, when the journal had invokes
   * beyond the kept ones, a marker that keeps new invokes off the edge indexes dropped ones used.
   */
  private async copyKept(journal: Journal, scope: JournalScope, cut: JournalCut, now: number): Promise<void> {
    const expiresAt = Math.floor(now / 1000) + JOURNAL_RETENTION_DAYS * 86_400;
    const keptFloor = cut.kept.reduce((top, e) => Math.max(top, invokeFloorOf(e.kind, e.entry.value) ?? 0), 0);
    const writes = cut.kept.map(
      (e) => () =>
        journal.record({
          ...scope,
          kind: e.kind,
          name: e.name,
          value: e.entry.value,
          at: Date.parse(e.entry.at),
          expiresAt,
          // its position and version: the rerun's replay checks the kept entries as recorded
          ...(e.entry.mark ? { mark: e.entry.mark } : {}),
        }),
    );
    if (cut.nextInvokeIndex > keptFloor) {
      writes.push(() =>
        journal.record({
          ...scope,
          kind: 'rerun',
          name: RERUN_MARKER,
          value: { nextInvokeIndex: cut.nextInvokeIndex },
          at: now,
          expiresAt,
        }),
      );
    }
    for (let i = 0; i < writes.length; i += COPY_CONCURRENCY) {
      await Promise.all(writes.slice(i, i + COPY_CONCURRENCY).map((write) => write()));
    }
  }
}
