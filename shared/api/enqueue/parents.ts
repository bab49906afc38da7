/**
 * An enqueue with `dependsOn`: its parents read and checked, the new job's start from their
 * states, its parents item, its registrations with the parents still running, and the read of
 * a job's parents and children for its view.
 */

import { type ChildEntry, type ParentEdge, parentEdges, parentFailedError } from '../../core/dependencies';
import type { EnqueueRequest } from '../../core/enqueue';
import { INVOKE_EDGE_POLICY } from '../../core/invoke';
import { type Job, type JobView, toView } from '../../core/job';
import type { JobTypeSpec } from '../../core/job-type';
import { METRIC } from '../../core/metrics';
import { incarnationOf } from '../../core/table';
import { registerChild, resolveFinishedParents, sameEdges, startOfChild } from '../../dispatch/release';
import { ConflictError, ValidationError } from '../../errors';
import { refuseParentsOf } from './checks';
import { type EnqueueContext, type EnqueueOptions, finishedExpiresAt, releaseDeps } from './deps';

/** How long a parents item outlives its job's creation: past the longest a job can live. */
const PARENTS_RETENTION_DAYS = 2 * 366;

export type ChildStart = Awaited<ReturnType<typeof startOfChild>>['start'];

/** A request's parents: the edges, what their states say about the job's start, and a job of its id if one exists. */
export interface Parents {
  edges: ParentEdge[];
  start: ChildStart;
  existing?: Job;
}

/**
 * The edges of a `dependsOn` and what the parents' states say about the new job's start (one
 * batch read). Refuses (400) unknown parents (`unknown_parent`), duplicates, the job itself and
 * a type whose runs a debounce or a rate limit decides.
 */
export async function parentsOf(
  ctx: EnqueueContext,
  spec: JobTypeSpec,
  refs: NonNullable<EnqueueRequest['dependsOn']>,
  id: string,
  options: EnqueueOptions,
): Promise<Parents> {
  const graph = ctx.deps.graph;
  if (!graph) {
    throw new ValidationError(
      'this deployment has no job dependencies',
      [{ path: 'dependsOn', message: 'not supported here' }],
      'dependencies_unsupported',
    );
  }
  refuseParentsOf(spec);
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
export function applyStart(ctx: EnqueueContext, job: Job, start: ChildStart, now: number): void {
  if (start.kind === 'waiting') {
    job.state = 'waiting';
    job.pendingParents = start.pending;
    if (start.resolved.length > 0) job.parentsResolved = start.resolved;
  } else if (start.kind === 'ended') {
    job.state = start.state;
    job.finishedAt = new Date(now).toISOString();
    job.expiresAt = finishedExpiresAt(ctx, now);
    const error = parentFailedError(start.parent, start.parentState, now);
    job.errors = [error];
    job.lastError = error;
  }
}

/**
 * Before the job is written: the parents item, written first so a job with parents never lacks
 * it. A job of this id that exists (`taken`, read with the parents) keeps its own, never
 * rewritten: with the same type and payload but other parents the request is not a replay, and
 * is refused (409) with nothing written.
 */
export async function putParents(
  ctx: EnqueueContext,
  job: Job,
  parents: Parents,
  taken: Job | undefined,
  options: EnqueueOptions,
  now: number,
): Promise<void> {
  const graph = ctx.deps.graph;
  if (!graph) return;
  if (taken && taken.payloadHash === job.payloadHash && !options.parentsChecked) {
    // the existing job's own parents item: its incarnation, not the one this request would create
    const stored = (await graph.parents({ child: job.id, incarnation: incarnationOf(taken.createdAt) })) ?? [];
    if (!sameEdges(stored, parents.edges)) {
      throw new ConflictError(
        `job ${job.id} already exists with other parents (dependsOn); a replay must name the same ones`,
        'id_conflict',
        { jobIds: [job.id], paths: ['dependsOn'] },
      );
    }
  }
  if (taken) return;
  // The job's own incarnation: a replay whose create is refused leaves this item an orphan
  // (under an incarnation no job has), which only waits for its TTL.
  await graph.putParents({
    child: job.id,
    incarnation: incarnationOf(job.createdAt),
    parents: parents.edges,
    expiresAt: Math.floor(now / 1000) + PARENTS_RETENTION_DAYS * 86_400,
  });
}

/**
 * A new job that waits for its parents: counted, registered with each parent still running, and
 * released from the parents of the same request that finished before it was written. Returns
 * its view as stored after that.
 */
export async function registerNew(
  ctx: EnqueueContext,
  job: Job,
  edges: readonly ParentEdge[],
  start: Extract<ChildStart, { kind: 'waiting' }>,
  options: EnqueueOptions,
  now: number,
): Promise<JobView> {
  ctx.deps.metrics?.add(METRIC.enqueued, job.type);
  const resolved = new Set(start.resolved);
  const registered = options.sameRequest ?? new Set<string>();
  const pending = edges.flatMap((edge, i) => (resolved.has(i) || registered.has(edge.id) ? [] : [i]));
  await registerChild(releaseDeps(ctx), job, edges, pending, now);
  // A parent of the same request may have finished (and run its release, which found no
  // child yet) before this write: read them and release the edges of those that did.
  const early = edges.flatMap((edge, i) => (!resolved.has(i) && registered.has(edge.id) ? [i] : []));
  await resolveFinishedParents(releaseDeps(ctx), job, edges, early, now);
  const current = await ctx.deps.store.get(job.id);
  return toView(current ?? job);
}

/**
 * A replay's registrations: with each parent still running (a duplicate entry is harmless),
 * and each edge of a parent that finished is resolved here (refused if counted already).
 */
export async function registerAgain(
  ctx: EnqueueContext,
  existing: Job,
  edges: readonly ParentEdge[],
  now: number,
): Promise<void> {
  await registerChild(
    releaseDeps(ctx),
    existing,
    edges,
    edges.map((_, i) => i),
    now,
  );
}

/** A job's parents (one read of its parents item) and children (its registry, when it has any) on its view. */
export async function withGraph({ deps }: EnqueueContext, view: JobView, job: Job): Promise<void> {
  const graph = deps.graph;
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
    const invokedBy = await invokers(graph, job.id, children);
    if (invokedBy.length > 0) view.invokedBy = invokedBy;
  }
}

/** Registry entries of policy `ignore` looked at for an invoke edge, at most: one read each. */
const MAX_INVOKER_LOOKS = 10;

/**
 * The jobs among a job's registered children that invoked it (`ctx.invoke`). An invoke's edge
 * has the policy `ignore` and, unlike a `dependsOn` edge, no entry in the invoking job's parents
 * item (core/invoke.ts): one read of that item per `ignore` entry, for the first
 * {@link MAX_INVOKER_LOOKS} of them.
 */
async function invokers(
  graph: NonNullable<EnqueueContext['deps']['graph']>,
  id: string,
  children: readonly ChildEntry[],
) {
  const candidates = children.filter((c) => c.policy === INVOKE_EDGE_POLICY).slice(0, MAX_INVOKER_LOOKS);
  const found = await Promise.all(
    candidates.map(async (c) => {
      if (c.incarnation === undefined) return [];
      const parents = await graph.parents({ child: c.child, incarnation: c.incarnation });
      return parents?.some((p) => p.id === id) ? [] : [c.child];
    }),
  );
  return [...new Set(found.flat())];
}
