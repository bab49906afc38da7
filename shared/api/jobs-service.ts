import { randomUUID } from 'node:crypto';
import type { PlatformConfig } from '../config';
import type { Clock } from '../core/clock';
import { pastRetention } from '../core/control';
import { type Debouncer, debounceRunAt, debounceScope, resolveDebounceKey } from '../core/debounce';
import { type JobGraph, needsRelease, type ParentEdge, parentEdges, parentFailedError } from '../core/dependencies';
import {
  type Dispatch,
  type EnqueueRequest,
  jsonBytes,
  MAX_PAYLOAD_BYTES,
  planEnqueue,
  SQS_MAX_DELAY_SECONDS,
} from '../core/enqueue';
import { resolveFlowKeys, resolveSingletonKey } from '../core/flow';
import {
  isPendingDebounceRun,
  type Job,
  type JobMessage,
  type JobView,
  jobMessage,
  type SkipReason,
  toView,
} from '../core/job';
import type { JobTypeSpec } from '../core/job-type';
import { METRIC, type Metrics } from '../core/metrics';
import { type Pacer, paceScope, rateLimitPace, resolvePaceKey } from '../core/pace';
import { payloadHash } from '../core/payload-hash';
import type { JobQueue, JobScheduler, JobStore } from '../core/ports';
import { checkDispatchBy, scheduleFireAt } from '../core/scheduling';
import { incarnationOf } from '../core/table';
import { parseOrThrow } from '../core/validation';
import {
  type ReleaseDeps,
  registerChild,
  releaseDepsOf,
  releaseOrHandOff,
  resolveFinishedParents,
  sameEdges,
  startOfChild,
} from '../dispatch/release';
import {
  ConfigError,
  ConflictError,
  DependencyError,
  NotFoundError,
  PayloadTooLargeError,
  ValidationError,
} from '../errors';
import { errorFields, type Logger } from '../logger';

export interface JobsServiceDeps {
  config: PlatformConfig;
  catalog: readonly JobTypeSpec[];
  store: JobStore;
  queue: JobQueue;
  scheduler: JobScheduler;
  clock: Clock;
  log: Logger;
  /** Rate-limit state; required when a job type has a `rateLimit`. */
  pacer?: Pacer;
  /** Debounce windows; required when a job type has a `debounce`. */
  debouncer?: Debouncer;
  /** Counts the jobs created (`JobsEnqueued`). @default nothing is counted */
  metrics?: Metrics;
  /** Job dependencies; required for an enqueue with `dependsOn`. @default `dependsOn` is refused (400) */
  graph?: JobGraph;
}

/** How long a parents item outlives its job's creation: past the longest a job can live. */
const PARENTS_RETENTION_DAYS = 2 * 366;

/** An SQS message an enqueue still has to send: see {@link JobsService.write}. */
export interface PendingSend {
  queueUrl: string;
  message: JobMessage;
  delaySeconds?: number;
  /** The job was created by this request (a failed send is then reported as "stored, not dispatched"). */
  created: boolean;
}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/** How to hand an existing, not yet started job to its queue again. */
function redispatchOf(job: Job, now: number): Dispatch {
  const runAt = Date.parse(job.runAt);
  if (job.state === 'scheduled' && runAt - now > SQS_MAX_DELAY_SECONDS * 1000)
    return { kind: 'schedule', fireAt: scheduleFireAt(runAt) };
  return { kind: 'now' };
}

/** What the API itself adds to an enqueue request (never read from the caller's body). */
export interface EnqueueOptions {
  /** The recurring schedule the job is a run of (`POST /schedules/{name}/run`). @default none */
  schedule?: string;
  /** Who enqueues (the caller's ARN): kept on the job item by the same write. @default not recorded */
  by?: string;
  /**
   * Parents written by the same request (a flow) that registered this job as their child when
   * they were created: each counts as not finished, and the job does not register with it.
   * @default none
   */
  sameRequest?: ReadonlySet<string>;
  /** Children registered with this job at its creation (a flow's `putChildren`). @default none */
  childCount?: number;
  /**
   * The caller compared an existing job of this id with the request's parents already (a flow
   * checks all its jobs before it writes any), so the write does not read its parents again.
   * @default false
   */
  parentsChecked?: boolean;
  /**
   * The time (epoch ms) the job is created at, hence its incarnation: a flow fixes it for all its
   * jobs up front, and writes the registry of a parent it creates under that incarnation, naming
   * its children's, before it writes the parent and them. @default the clock's now
   */
  at?: number;
}

/** Enqueue and read jobs: the logic behind `POST /jobs` and `GET /jobs/{id}`. */

export class JobsService {
  private readonly specs: Map<string, JobTypeSpec>;

  constructor(private readonly deps: JobsServiceDeps) {
    this.specs = new Map(deps.catalog.map((spec) => [spec.type, spec]));
    const limited = deps.catalog.find((spec) => spec.rateLimit);
    if (limited && !deps.pacer) {
      throw new ConfigError(`job type "${limited.type}" has a rate limit: the API needs its pacer`);
    }
    const debounced = deps.catalog.find((spec) => spec.debounce);
    if (debounced && !deps.debouncer) {
      throw new ConfigError(`job type "${debounced.type}" has a debounce: the API needs its debouncer`);
    }
  }

  /**
   * A rate-limited type's verdict on a new job: undefined when it is accepted (one start counted),
   * or why it is skipped. A replay of a job id that exists already counts nothing (a read first,
   * only when the caller names the id).
   */
  private async rateLimited(spec: JobTypeSpec, request: EnqueueRequest, payload: unknown, now: number) {
    const { rateLimit } = spec;
    const pacer = this.deps.pacer;
    if (!rateLimit || !pacer) return undefined;
    const key = resolvePaceKey(rateLimit, payload, 'rateLimit');
    if (request.id !== undefined && (await this.exists(request.id, now))) return undefined;
    const ok = await pacer.tryStart({
      scope: paceScope(spec.type, 'rateLimit'),
      key,
      now,
      pace: rateLimitPace(rateLimit),
    });
    return ok ? undefined : ({ kind: 'rate-limit', key, at: new Date(now).toISOString() } satisfies SkipReason);
  }

  /** Types that are both in the catalog and deployed (have a route). */
  deployedTypes(): string[] {
    return [...this.specs.keys()].filter((type) => this.deps.config.routes[type]).sort();
  }

  /**
   * Validates, writes the job with one conditional put, then hands it to SQS or Scheduler.
   * Returns `created: false` with the stored job when the id exists with the same type and payload.
   */
  async enqueue(request: EnqueueRequest, options: EnqueueOptions = {}): Promise<{ created: boolean; job: JobView }> {
    const out = await this.write(request, options);
    if (out.send) {
      const { queueUrl, message, delaySeconds } = out.send;
      await this.deps.queue
        .send(queueUrl, message, delaySeconds)
        .catch((error: unknown) => this.throwSendFailure(out.send as PendingSend, error));
    }
    return { created: out.created, job: out.job };
  }

  /**
   * The enqueue of many jobs: each request is written as {@link enqueue} writes it, but the SQS
   * messages are not sent: each result carries its {@link PendingSend}, to hand to
   * {@link sendPending} once the batch's writes are done.
   */
  async write(
    request: EnqueueRequest,
    options: EnqueueOptions = {},
  ): Promise<{ created: boolean; job: JobView; send?: PendingSend }> {
    const { config, store, clock } = this.deps;
    const { spec, payload, flowKeys, singletonKey, throttleKey } = this.checked(request);
    const now = options.at ?? clock.now();
    const id = request.id ?? randomUUID();
    if (spec.debounce) refuseDebouncedDelay(spec, request);
    // Parents are checked before anything is written: an unknown one is a 400.
    const parents = request.dependsOn ? await this.parentsOf(spec, request.dependsOn, id, options) : undefined;
    // A job over its rate is written skipped and never runs: it joins no debounce window (else it
    // would end the pending run it replaced, and neither would run).
    const skipReason = await this.rateLimited(spec, request, payload, now);
    const debounced =
      spec.debounce && skipReason === undefined ? await this.debounce(spec, request, id, payload, now) : undefined;
    const plan = planEnqueue(debounced ? { runAt: new Date(debounced.runAt).toISOString() } : request, now);
    const dispatchBy =
      request.dispatchBy === undefined ? undefined : checkDispatchBy(request.dispatchBy, plan.runAt, now);
    const nowIso = new Date(now).toISOString();
    const job: Job = {
      id,
      type: spec.type,
      state: plan.state,
      payload,
      payloadHash: payloadHash(spec.type, payload),
      attempts: 0,
      maxAttempts: request.maxAttempts ?? spec.retry.maxAttempts,
      createdAt: nowIso,
      updatedAt: nowIso,
      runAt: new Date(plan.runAt).toISOString(),
      leaseToken: 0,
      errors: [],
      ...(request.backoff ? { backoff: request.backoff } : {}),
      ...(dispatchBy !== undefined ? { dispatchBy } : {}),
      ...(flowKeys ? { flowKeys } : {}),
      ...(singletonKey !== undefined ? { singletonKey } : {}),
      ...(throttleKey !== undefined ? { throttleKey } : {}),
      ...(debounced ? { debounceKey: debounced.key, debounceWindow: debounced.first, debounceSeq: debounced.seq } : {}),
      ...(options.schedule !== undefined ? { schedule: options.schedule } : {}),
      ...(options.by !== undefined ? { enqueuedBy: options.by } : {}),
      ...(options.childCount ? { childCount: options.childCount } : {}),
    };
    if (parents) this.applyStart(job, parents.start, now);
    if (skipReason) {
      // Over its rate: written as skipped (so the caller and the listing see why), never sent.
      Object.assign(job, {
        state: 'skipped',
        skipReason,
        finishedAt: nowIso,
        expiresAt: Math.floor(now / 1000) + config.retentionDays * 86_400,
      } satisfies Partial<Job>);
    }

    const graph = this.deps.graph;
    // A job of this id exists (read with the parents): its parents item is never rewritten. With
    // the same type and payload but other parents it is not a replay: a 409, nothing written.
    const taken = parents?.existing && !pastRetention(parents.existing, now) ? parents.existing : undefined;
    if (taken && parents && graph && taken.payloadHash === job.payloadHash && !options.parentsChecked) {
      // the existing job's own parents item: its incarnation, not the one this request would create
      const stored = (await graph.parents({ child: id, incarnation: incarnationOf(taken.createdAt) })) ?? [];
      if (!sameEdges(stored, parents.edges)) {
        throw new ConflictError(
          `job ${id} already exists with other parents (dependsOn); a replay must name the same ones`,
          'id_conflict',
          { jobIds: [id], paths: ['dependsOn'] },
        );
      }
    }
    // The parents item is written before the status item, so a job with parents never lacks it.
    if (parents && graph && !taken) {
      // The job's own incarnation: a replay whose create is refused leaves this item an orphan
      // (under an incarnation no job has), which only waits for its TTL.
      await graph.putParents({
        child: id,
        incarnation: incarnationOf(job.createdAt),
        parents: parents.edges,
        expiresAt: Math.floor(now / 1000) + PARENTS_RETENTION_DAYS * 86_400,
      });
    }
    const written = await store.create(job);
    if (!written.created && parents && written.existing.payloadHash === job.payloadHash) {
      // A replay may follow a request that died before its registrations: make them again
      // (each edge is counted at most once on the child, whoever counts it).
      if (written.existing.state === 'waiting' && written.existing.pendingParents !== undefined) {
        await this.registerAgain(written.existing, parents.edges, now);
      }
    }
    if (written.created && job.state === 'waiting' && parents && parents.start.kind === 'waiting') {
      this.deps.metrics?.add(METRIC.enqueued, job.type);
      const resolved = new Set(parents.start.resolved);
      const registered = options.sameRequest ?? new Set<string>();
      const pending = parents.edges.flatMap((edge, i) => (resolved.has(i) || registered.has(edge.id) ? [] : [i]));
      await registerChild(this.releaseDeps(), job, parents.edges, pending, now);
      // A parent of the same request may have finished (and run its release, which found no
      // child yet) before this write: read them and release the edges of those that did.
      const early = parents.edges.flatMap((edge, i) => (!resolved.has(i) && registered.has(edge.id) ? [i] : []));
      await resolveFinishedParents(this.releaseDeps(), job, parents.edges, early, now);
      const current = await store.get(id);
      return { created: true, job: toView(current ?? job) };
    }
    if (written.created && parents?.start.kind === 'ended') {
      this.deps.log.info('job ended at enqueue by a parent that did not succeed', {
        jobId: id,
        parent: parents.start.parent,
        state: job.state,
      });
      const send = await this.handOffEnded(job, now, true);
      return { created: true, job: toView(job), ...(send ? { send } : {}) };
    }
    if (!written.created) {
      const existing = written.existing;
      if (existing.payloadHash !== job.payloadHash) {
        throw new ConflictError(`job ${job.id} already exists with a different type or payload`, 'id_conflict', {
          jobId: job.id,
        });
      }
      // A replay may follow a lost send: hand a not-yet-started job to its queue again.
      // A duplicate message is harmless; the lease lets only one delivery run.
      const view = toView(existing);
      if (existing.state === 'queued' || existing.state === 'scheduled') {
        const send = await this.dispatch(existing, redispatchOf(existing, now), now, false);
        return { created: false, job: view, ...(send ? { send } : {}) };
      }
      // A replay of a job created finished with children (a flow's), whose hand-off was lost.
      if (needsRelease(existing)) {
        const send = await this.handOffEnded(existing, now, false);
        return { created: false, job: view, ...(send ? { send } : {}) };
      }
      return { created: false, job: view };
    }
    // created, and not turned away by its rate limit
    if (!skipReason) this.deps.metrics?.add(METRIC.enqueued, job.type);
    if (debounced) {
      const debounceScopeOf = debounceScope(spec.type);
      if (debounced.previous !== undefined) {
        await this.replace(debounced.previous, job.id, debounced.seq, debounced.key, now);
      }
      // A newer job may have opened the window while this one was being written, and not found it
      // to replace: then this one steps aside for it (one of the two always sees the other). Only
      // for a run still pending: the window may name a job this one has just replaced (a client's
      // retry of a job not yet written opens the window again), and stepping aside for it would
      // leave the key with no run.
      const window = (await this.deps.debouncer?.state({ scope: debounceScopeOf, key: debounced.key })) ?? {};
      const other = window.run !== undefined && window.run !== job.id ? await store.get(window.run) : undefined;
      if (other && other.debounceSeq !== undefined && other.debounceSeq < debounced.seq) {
        // The window names an older job (a retry of it opened the window after this one): this
        // job is the run. It takes the window over, so the window closes when it starts and
        // `debouncedInto` finds it, and it ends that job if it still waits.
        await this.deps.debouncer
          ?.adopt({ scope: debounceScopeOf, key: debounced.key, from: other.id, to: job.id })
          .catch((error: unknown) =>
            this.deps.log.warn('could not take over the debounce window', { jobId: job.id, ...errorFields(error) }),
          );
        if (isPendingDebounceRun(other)) await this.replace(other.id, job.id, debounced.seq, debounced.key, now);
      } else if (other && isPendingDebounceRun(other)) {
        if (await this.replace(job.id, other.id, other.debounceSeq, debounced.key, now)) {
          const skipped = await store.get(job.id);
          if (skipped) return { created: true, job: toView(skipped) };
        }
      }
    }
    if (skipReason) {
      this.deps.log.info('job skipped: its rate limit is spent', {
        jobId: job.id,
        type: job.type,
        key: skipReason.key,
      });
      const send = await this.handOffEnded(job, now, true);
      return { created: true, job: toView(job), ...(send ? { send } : {}) };
    }
    const send = await this.dispatch(job, plan.dispatch, now, true).catch((error: unknown) =>
      this.throwDispatchFailure(job.id, error),
    );
    return { created: true, job: toView(job), ...(send ? { send } : {}) };
  }

  /**
   * Sends the messages {@link write} left pending, with as few SendMessageBatch calls as SQS
   * allows. Returns, in order, undefined for a message sent, or the error to report for its job
   * (as {@link enqueue} would have thrown it).
   */
  async sendPending(sends: readonly PendingSend[]): Promise<(Error | undefined)[]> {
    const results = new Array<Error | undefined>(sends.length);
    const byQueue = new Map<string, number[]>();
    sends.forEach((send, i) => {
      byQueue.set(send.queueUrl, [...(byQueue.get(send.queueUrl) ?? []), i]);
    });
    await Promise.all(
      [...byQueue].map(async ([queueUrl, indexes]) => {
        const outcomes = await this.deps.queue
          .sendBatch(
            queueUrl,
            indexes.map((i) => {
              const send = sends[i] as PendingSend;
              return { message: send.message, ...(send.delaySeconds ? { delaySeconds: send.delaySeconds } : {}) };
            }),
          )
          .catch((error: unknown) => indexes.map(() => ({ sent: false as const, error: asError(error) })));
        indexes.forEach((i, n) => {
          const outcome = outcomes[n];
          if (outcome?.sent) return;
          const error = outcome?.error ?? new DependencyError('SQS SendMessageBatch reported nothing for this message');
          try {
            this.throwSendFailure(sends[i] as PendingSend, error);
          } catch (e) {
            results[i] = asError(e);
          }
        });
      }),
    );
    return results;
  }

  /** A new job's hand-off failed: it stays stored; the caller may replay, or the supervisor sends it. */
  private throwDispatchFailure(id: string, error: unknown): never {
    // The job stays. A concurrent replay of this request may have found it, dispatched it and
    // answered 200: deleting it now would lose an acknowledged job. Left undispatched, it is in
    // the due index, and the supervisor sends it once it is overdue (docs/architecture.md).
    const message = error instanceof Error ? error.message : String(error);
    this.deps.log.error('could not dispatch a new job; it stays stored for a replay or the supervisor', {
      jobId: id,
      errorMessage: message,
    });
    throw new DependencyError(
      `job ${id} was stored but could not be handed to its queue (${message}). Send the same request ` +
        'again (same id) to dispatch it now; otherwise the supervisor dispatches it once it is overdue.',
      error,
      { jobId: id },
    );
  }

  private throwSendFailure(send: PendingSend, error: unknown): never {
    if (send.created) this.throwDispatchFailure(send.message.id, error);
    throw error;
  }

  /**
   * A job created finished (ended by a parent, skipped by its rate) with children registered at
   * its creation (a flow's): the send of its message, whose worker finds it finished and
   * releases them. None for a job without children.
   */
  private async handOffEnded(job: Job, now: number, created: boolean): Promise<PendingSend | undefined> {
    if (!needsRelease(job)) return undefined;
    return this.dispatch({ ...job, runAt: new Date(now).toISOString() }, { kind: 'now' }, now, created);
  }

  /** Hands a job to Scheduler now, or returns the SQS send to make. */
  private async dispatch(
    job: Job,
    dispatch: Dispatch,
    now: number,
    created: boolean,
  ): Promise<PendingSend | undefined> {
    const route = this.deps.config.routes[job.type];
    if (!route) throw new NotFoundError(`job type ${job.type} is not deployed`);
    const message = jobMessage({ id: job.id, type: job.type });
    const remaining = Math.max(0, Math.ceil((Date.parse(job.runAt) - now) / 1000));
    switch (dispatch.kind) {
      case 'now':
      case 'sqs-delay':
        return {
          queueUrl: route.queueUrl,
          message,
          ...(remaining > 0 ? { delaySeconds: Math.min(remaining, SQS_MAX_DELAY_SECONDS) } : {}),
          created,
        };
      case 'schedule':
        await this.deps.scheduler.scheduleJob({
          name: job.id,
          fireAt: dispatch.fireAt,
          queueArn: route.queueArn,
          // it fires ahead of runAt: the worker hides it until then without a refused claim
          message: { ...message, notBefore: job.runAt },
        });
        return undefined;
    }
  }

  /**
   * The checks of an enqueue request that need no read: its type, payload and keys. Throws the
   * 400 (or 413) an enqueue answers.
   */
  private checked(request: EnqueueRequest) {
    const spec = this.specs.get(request.type);
    const route = this.deps.config.routes[request.type];
    if (!spec || !route) {
      throw new ValidationError(
        `unknown job type "${request.type}"`,
        [{ path: 'type', message: `must be one of: ${this.deployedTypes().join(', ')}` }],
        'unknown_type',
      );
    }
    const size = jsonBytes(request.payload);
    if (size > MAX_PAYLOAD_BYTES) {
      throw new PayloadTooLargeError(
        `payload is ${size} bytes of JSON; the limit is ${MAX_PAYLOAD_BYTES} bytes (it is stored in the job's DynamoDB item)`,
        MAX_PAYLOAD_BYTES,
      );
    }
    const payload = parseOrThrow(spec.payload, request.payload, {
      message: `payload does not match the ${spec.type} schema`,
      code: 'invalid_payload',
      prefix: 'payload',
    });
    if (request.concurrencyKey !== undefined && !spec.concurrency?.some((l) => l.key)) {
      throw new ValidationError(
        `job type "${spec.type}" has no keyed concurrency limit`,
        [{ path: 'concurrencyKey', message: 'only for a job type with a concurrency limit that has a key' }],
        'invalid_concurrency_key',
      );
    }
    const flowKeys = spec.concurrency ? resolveFlowKeys(spec.concurrency, payload, request.concurrencyKey) : undefined;
    if (request.singletonKey !== undefined && !spec.singleton) {
      throw new ValidationError(
        `job type "${spec.type}" has no singleton`,
        [{ path: 'singletonKey', message: 'only for a job type with a singleton' }],
        'invalid_singleton_key',
      );
    }
    const singletonKey = spec.singleton
      ? resolveSingletonKey(spec.singleton, payload, request.singletonKey)
      : undefined;
    const throttleKey = spec.throttle ? resolvePaceKey(spec.throttle, payload, 'throttle') : undefined;
    return { spec, payload, flowKeys, singletonKey, throttleKey };
  }

  /**
   * Every check of an enqueue request that writes nothing and reads nothing (type, payload, keys,
   * times, the form of `dependsOn`): what `POST /flows` runs on every node before it writes any.
   * A type with a debounce or a rate limit is refused when the request has parents. Returns the
   * hash a job of this request would carry (to tell a replay from an id conflict).
   */
  validate(request: EnqueueRequest, path: string): { payloadHash: string } {
    try {
      const { spec, payload } = this.checked(request);
      if (spec.debounce) refuseDebouncedDelay(spec, request);
      const now = this.deps.clock.now();
      const plan = planEnqueue(request, now);
      if (request.dispatchBy !== undefined) checkDispatchBy(request.dispatchBy, plan.runAt, now);
      if (request.dependsOn) {
        if (spec.debounce || spec.rateLimit) {
          throw new ValidationError(
            `job type "${spec.type}" has a ${spec.debounce ? 'debounce' : 'rate limit'}: its jobs cannot wait for parents`,
            [{ path: 'dependsOn', message: 'not allowed for this job type' }],
            'dependencies_unsupported',
          );
        }
        parentEdges(request.dependsOn, request.id);
      }
      return { payloadHash: payloadHash(spec.type, payload) };
    } catch (error) {
      if (error instanceof ValidationError) throw prefixed(error, path);
      throw error;
    }
  }

  /** A job's parents (one read of its parents item) and children (its registry, when it has any) on its view. */
  private async withGraph(view: JobView, job: Job): Promise<void> {
    const graph = this.deps.graph;
    if (!graph) return;
    const incarnation = incarnationOf(job.createdAt);
    const parents = await graph.parents({ child: job.id, incarnation });
    if (parents) view.parents = parents.map((p) => ({ id: p.id, onParentFailure: p.policy }));
    if ((job.childCount ?? 0) > 0) {
      const children = await graph.children({
        parent: job.id,
        incarnation,
        count: job.childCount ?? 0,
        seal: false,
      });
      if (children.length > 0) view.children = [...new Set(children.map((c) => c.child))];
    }
  }

  private releaseDeps(): ReleaseDeps {
    const graph = this.deps.graph;
    if (!graph) throw new ConfigError('job dependencies need the job graph');
    return releaseDepsOf({ config: this.deps.config, graph, queue: this.deps.queue, scheduler: this.deps.scheduler });
  }

  /**
   * The edges of a `dependsOn` and what the parents' states say about the new job's start (one
   * batch read). Refuses (400) unknown parents (`unknown_parent`), duplicates, the job itself and
   * a type whose runs a debounce or a rate limit decides.
   */
  private async parentsOf(
    spec: JobTypeSpec,
    refs: NonNullable<EnqueueRequest['dependsOn']>,
    id: string,
    options: EnqueueOptions,
  ): Promise<{ edges: ParentEdge[]; start: Awaited<ReturnType<typeof startOfChild>>['start']; existing?: Job }> {
    const graph = this.deps.graph;
    if (!graph) {
      throw new ValidationError(
        'this deployment has no job dependencies',
        [{ path: 'dependsOn', message: 'not supported here' }],
        'dependencies_unsupported',
      );
    }
    if (spec.debounce || spec.rateLimit) {
      throw new ValidationError(
        `job type "${spec.type}" has a ${spec.debounce ? 'debounce' : 'rate limit'}: its jobs cannot wait for parents`,
        [{ path: 'dependsOn', message: 'not allowed for this job type' }],
        'dependencies_unsupported',
      );
    }
    const edges = parentEdges(refs, id);
    const { start, missing, existing } = await startOfChild(graph, edges, options.sameRequest, id);
    if (missing.length > 0) {
      throw new ValidationError(
        `unknown parent job${missing.length > 1 ? 's' : ''}: ${missing.map((i) => edges[i]?.id).join(', ')}`,
        missing.map((i) => ({ path: `dependsOn.${i}`, message: 'no such job' })),
        'unknown_parent',
      );
    }
    return { edges, start, ...(existing ? { existing } : {}) };
  }

  /** A new job's state from its parents: waiting for them, or ended by one at once. */
  private applyStart(job: Job, start: Awaited<ReturnType<typeof startOfChild>>['start'], now: number): void {
    if (start.kind === 'waiting') {
      job.state = 'waiting';
      job.pendingParents = start.pending;
      if (start.resolved.length > 0) job.parentsResolved = start.resolved;
    } else if (start.kind === 'ended') {
      const nowIso = new Date(now).toISOString();
      job.state = start.state;
      job.finishedAt = nowIso;
      job.expiresAt = Math.floor(now / 1000) + this.deps.config.retentionDays * 86_400;
      const error = parentFailedError(start.parent, start.parentState, now);
      job.errors = [error];
      job.lastError = error;
    }
  }

  /**
   * A replay's registrations: with each parent still running (a duplicate entry is harmless),
   * and each edge of a parent that finished is resolved here (refused if counted already).
   */
  private async registerAgain(existing: Job, edges: readonly ParentEdge[], now: number): Promise<void> {
    await registerChild(
      this.releaseDeps(),
      existing,
      edges,
      edges.map((_, i) => i),
      now,
    );
  }

  async get(id: string): Promise<JobView> {
    const job = await this.deps.store.get(id);
    const now = this.deps.clock.now();
    // TTL deletes lazily: an expired job is gone as far as callers are concerned.
    if (!job || (job.expiresAt !== undefined && job.expiresAt * 1000 < now)) {
      throw new NotFoundError(`job ${id} not found`, 'job_not_found');
    }
    const view = toView(job);
    await this.withGraph(view, job);
    if (job.skipReason?.kind === 'debounce' && job.skipReason.by !== undefined) {
      view.debouncedInto = await this.debounceRun(job, job.skipReason.by);
    }
    return view;
  }

  /**
   * A debounced type's new job: makes it its key's pending run, and says when it starts (the end
   * of the quiet period, or the window's longest wait) and which run it replaces. Refuses a delay
   * (the debounce sets the start). A replay of an id that exists already changes nothing.
   */
  private async debounce(
    spec: JobTypeSpec,
    request: EnqueueRequest,
    id: string,
    payload: unknown,
    now: number,
  ): Promise<{ key: string; runAt: number; first: number; seq: number; previous?: string } | undefined> {
    const options = spec.debounce;
    const debouncer = this.deps.debouncer;
    if (!options || !debouncer) return undefined;
    const key = resolveDebounceKey(options, payload);
    // A replay must not take the run back from a newer job (and so replace it).
    if (request.id !== undefined && (await this.exists(request.id, now))) return undefined;
    const opened = await debouncer.open({ scope: debounceScope(spec.type), key, jobId: id, now });
    return {
      key,
      first: opened.first,
      seq: opened.seq,
      runAt: debounceRunAt(now, opened.first, options),
      ...(opened.previous === undefined ? {} : { previous: opened.previous }),
    };
  }

  /**
   * Ends the pending run a newer job (`by`, whose window open had `bySeq`) of its debounce key
   * replaced: `skipped`, pointing to it. A run that started meanwhile runs: then both run, never
   * neither. Only a job of a lower `seq` is ended: a replay that opened the window again may make
   * two jobs each see the other as the run it replaced, and only the later open wins, so the key
   * keeps a run. True when it ended it.
   */
  private async replace(
    previousId: string,
    by: string,
    bySeq: number | undefined,
    key: string,
    now: number,
  ): Promise<boolean> {
    const { store, log, config } = this.deps;
    try {
      const previous = await store.get(previousId);
      if (!previous || !['queued', 'scheduled'].includes(previous.state) || previous.attempts !== 0) return false;
      const skipped =
        (await store.skip?.({
          job: previous,
          now,
          expiresAt: Math.floor(now / 1000) + config.retentionDays * 86_400,
          reason: { kind: 'debounce', key, by, at: new Date(now).toISOString() },
          ...(bySeq === undefined ? {} : { beforeSeq: bySeq }),
        })) ?? false;
      if (skipped) log.info('debounced: a newer job replaced the pending run', { jobId: previousId, by });
      if (skipped && this.deps.graph) {
        await releaseOrHandOff(this.releaseDeps(), previous, now, log.child({ jobId: previousId }));
      }
      return skipped;
    } catch (error) {
      log.warn('could not end the run a debounce replaced; both run', { jobId: previousId, ...errorFields(error) });
      return false;
    }
  }

  /** Whether a job `id` exists and is retained: an enqueue with that id is then a replay (`create` reuses one past its retention). */
  private async exists(id: string, now: number): Promise<boolean> {
    const job = await this.deps.store.get(id);
    return job !== undefined && !pastRetention(job, now);
  }

  /**
   * The run a replaced job's window ended in: read from the key's window item when the window is
   * the open one or the last one closed (one read), else by following the chain of replacements
   * (a read per hop, at most 20).
   */
  private async debounceRun(job: Job, by: string): Promise<string> {
    const spec = this.specs.get(job.type);
    if (spec?.debounce && this.deps.debouncer && job.debounceKey !== undefined && job.debounceWindow !== undefined) {
      const window = await this.deps.debouncer.state({ scope: debounceScope(job.type), key: job.debounceKey });
      if (window.run !== undefined && window.first === job.debounceWindow) return window.run;
      if (window.lastRun !== undefined && window.lastFirst === job.debounceWindow) return window.lastRun;
    }
    let current = by;
    for (let hop = 0; hop < 20; hop++) {
      const next = await this.deps.store.get(current);
      if (next?.skipReason?.kind !== 'debounce' || next.skipReason.by === undefined) return current;
      current = next.skipReason.by;
    }
    return current;
  }
}

/** `error` with each issue's path under `prefix` (e.g. `jobs.3`). */
function prefixed(error: ValidationError, prefix: string): ValidationError {
  return new ValidationError(
    error.message,
    (error.issues ?? []).map((issue) => ({ ...issue, path: issue.path ? `${prefix}.${issue.path}` : prefix })),
    error.code,
  );
}

/** A debounced type's jobs start when their key has been quiet: a delay is refused (400). */
function refuseDebouncedDelay(spec: JobTypeSpec, request: EnqueueRequest): void {
  for (const field of ['delaySeconds', 'runAt'] as const) {
    if (request[field] !== undefined) {
      throw new ValidationError(
        `job type "${spec.type}" is debounced: its jobs start when their key has been quiet`,
        [{ path: field, message: 'not allowed for a debounced job type' }],
        'debounced_type',
      );
    }
  }
}
