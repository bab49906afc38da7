/**
 * Dependencies at run time: registering a new child with its parents, and the release that a
 * finished parent runs over its children (see shared/core/dependencies.ts, docs/workflows.md).
 *
 * The worker calls {@link createRelease}'s `afterEnd` once a job it ran ended (succeeded, failed
 * for good, expired, skipped) and when a delivery finds a finished job whose release did not
 * complete (`needsRelease`): its message came back because a release failed half way, so it is
 * run again; every write in it is conditional and counts an edge at most once.
 */
import {
  type ChildEntry,
  childStart,
  type EdgeRelease,
  edgeOutcome,
  type JobGraph,
  needsRelease,
  type ParentEdge,
} from '../core/dependencies';
import { INVOKE_EDGE_POLICY } from '../core/invoke';
import type { Job } from '../core/job';
import type { JobQueue, JobScheduler } from '../core/ports';
import { isTerminal, type JobState } from '../core/states';
import { incarnationOf } from '../core/table';
import { ConfigError } from '../errors';
import { errorFields, type Logger } from '../logger';
import { type DispatchDeps, dispatch, dispatchNow } from './dispatch';

/** What the release needs: the graph, and what a hand-off needs (the queues, a scheduler for far runAts). */
export interface ReleaseDeps extends DispatchDeps {
  graph: JobGraph;
  /** Retention of a finished job, in days: a child ended by its parent keeps it. */
  retentionDays: number;
}

/**
 * The release's dependencies from a platform's: its routes and retention, its graph and queue,
 * and a Scheduler when the caller may create schedules.
 */
export function releaseDepsOf(input: {
  config: Pick<ReleaseDeps, 'routes' | 'queues'> & { retentionDays: number };
  graph: JobGraph;
  queue: JobQueue;
  scheduler?: JobScheduler | undefined;
  /** The types whose messages carry a group (`fairQueueTypes` of the specs the caller knows). @default none */
  fairQueues?: ReadonlySet<string> | undefined;
}): ReleaseDeps {
  return {
    graph: input.graph,
    queue: input.queue,
    ...(input.scheduler ? { scheduler: input.scheduler } : {}),
    ...(input.fairQueues ? { fairQueues: input.fairQueues } : {}),
    routes: input.config.routes,
    ...(input.config.queues ? { queues: input.config.queues } : {}),
    retentionDays: input.config.retentionDays,
  };
}

/**
 * Most registry slots of a live parent the supervisor's look at a waiting child reads (10 chunk
 * items); past it, the child is registered again without a read (2 WU), so a look costs the
 * same for a fan-out of 10,000 as for one of 100.
 */
export const RECONCILE_READ_SLOTS = 100;

/** Releases at once per parent. */
const RELEASE_CONCURRENCY = 16;

async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, run));
}

const expiresAtOf = (now: number, retentionDays: number) => Math.floor(now / 1000) + retentionDays * 86_400;

/**
 * Releases the children of `parentId`, if it is finished: each registered edge is counted (or
 * ends its child, by policy) with one conditional write; a child whose count reaches zero is
 * made due and sent; a child ended by its policy that has children itself is sent its own
 * message, so its worker releases them (no recursion here). Records the slots handled. Throws
 * when a write or send failed: the caller keeps the parent's message, and a later delivery runs
 * the release again. Returns how many children it made due.
 */
export async function releaseChildren(
  deps: ReleaseDeps,
  parentId: string,
  now: number,
  log: Logger,
): Promise<{ released: number }> {
  const parent = (await deps.graph.jobs([parentId])).get(parentId);
  if (!parent || !needsRelease(parent)) return { released: 0 };
  const count = parent.childCount ?? 0;
  const entries = await deps.graph.children({ parent: parentId, incarnation: incarnationOf(parent.createdAt), count });
  let released = 0;
  await eachLimited(entries, RELEASE_CONCURRENCY, async (entry) => {
    if ((await releaseEdge(deps, parent.id, parent.state, entry, now)) === 'ready') released += 1;
  });
  await deps.graph.markReleased({ parent: parentId, count });
  log.info('children released', { children: entries.length, due: released, parentState: parent.state });
  return { released };
}

/** One edge of a finished parent: what its write did (`ready`: it made the child due). */
async function releaseEdge(
  deps: ReleaseDeps,
  parentId: string,
  parentState: JobState,
  entry: ChildEntry,
  now: number,
): Promise<EdgeRelease['kind']> {
  const result = await deps.graph.release({
    child: entry.child,
    index: entry.index,
    outcome: edgeOutcome(parentState, entry.policy),
    parent: parentId,
    parentState,
    now,
    expiresAt: expiresAtOf(now, deps.retentionDays),
    ...(entry.parents === 1 ? { only: true } : {}),
    // the child this edge belongs to: a later job that took its id is refused (nothing to do)
    ...(entry.incarnation === undefined ? {} : { incarnation: entry.incarnation }),
  });
  switch (result.kind) {
    case 'ready':
      await dispatch(deps, result.job, now);
      return 'ready';
    case 'ended':
      // its own children wait for its release: its worker runs it (the claim finds it finished)
      if ((result.job.childCount ?? 0) > 0) await dispatchNow(deps, result.job, now);
      return 'ended';
    case 'refused':
      // Counted before: a release that died after the wake and before the send left the child
      // due with no message; send it again (a spare copy is harmless: the lease lets one run).
      if (result.job?.state === 'queued' && result.job.attempts === 0) await dispatch(deps, result.job, now);
      // Ended by this edge before (or by another parent), and its own release never ran: the
      // first hand-off's send failed, or the end write's response was lost and its retry refused.
      // Hand it off again (a spare copy finds the release done and changes nothing).
      else if (result.job && needsRelease(result.job)) await dispatchNow(deps, result.job, now);
      return 'refused';
    case 'counted':
      return 'counted';
  }
}

/** The registry entry of `child`'s edge at `index`: it names the child's incarnation. */
function entryOf(child: Job, edge: ParentEdge, index: number, parents: number): ChildEntry {
  return { child: child.id, policy: edge.policy, index, parents, incarnation: incarnationOf(child.createdAt) };
}

/**
 * Registers a new child (already written, `waiting`) with each of its parents still pending.
 * An edge whose parent finished first (refused) is resolved here, by the parent's state and the
 * edge's policy, through the same conditional release write, and the child sent when that was
 * its last. `pending` lists the indexes of the parents to register with.
 */
export async function registerChild(
  deps: ReleaseDeps,
  child: Job,
  parents: readonly ParentEdge[],
  pending: readonly number[],
  now: number,
): Promise<void> {
  const expiresAt = expiresAtOf(now, 2 * 366);
  await eachLimited(pending, RELEASE_CONCURRENCY, async (index) => {
    const edge = parents[index] as ParentEdge;
    const entry = entryOf(child, edge, index, parents.length);
    const added = await deps.graph.addChild({ parent: edge.id });
    if (
      added.slot !== undefined &&
      (await deps.graph.fillSlot({
        parent: edge.id,
        incarnation: added.incarnation,
        slot: added.slot,
        entry,
        expiresAt,
      }))
    )
      return;
    // The parent finished first: its release does not know this child. Resolve the edge here.
    const parent = added.slot === undefined ? added.parent : (await deps.graph.jobs([edge.id])).get(edge.id);
    if (!parent || !isTerminal(parent.state)) {
      throw new Error(`parent ${edge.id} of job ${child.id} is missing or not finished after a refused registration`);
    }
    await releaseEdge(deps, parent.id, parent.state, entry, now);
  });
}

/**
 * After a child is written, the edges of its parents created by the same request (a flow's
 * `putChildren` registered it ahead, so it counted them as pending without reading them): one
 * strongly consistent batch read, and each edge of a parent already finished is released here.
 * Such a parent may have ended, and run its release, before the child was written: that release
 * found no child and was refused. The edge's marker on the child counts it at most once, so a
 * release of the parent running at the same time changes nothing twice. `indexes` lists those
 * parents' indexes.
 */
export async function resolveFinishedParents(
  deps: ReleaseDeps,
  child: Job,
  parents: readonly ParentEdge[],
  indexes: readonly number[],
  now: number,
): Promise<void> {
  if (indexes.length === 0) return;
  const found = await deps.graph.jobs(indexes.map((i) => (parents[i] as ParentEdge).id));
  await eachLimited(indexes, RELEASE_CONCURRENCY, async (index) => {
    const edge = parents[index] as ParentEdge;
    const parent = found.get(edge.id);
    if (!parent || !isTerminal(parent.state)) return;
    const entry = entryOf(child, edge, index, parents.length);
    await releaseEdge(deps, parent.id, parent.state, entry, now);
  });
}

/**
 * The supervisor's look at a child still waiting for its parents when the creation sweep reaches
 * it, 9–10 minutes after its creation. It heals a registration that was lost: the API died
 * between the child's write and its registrations, and no replay of the request came. Each
 * parent whose edge is not counted yet is looked at: a finished one has its edge released here
 * (the same conditional write a release makes), and a live one that does not list the child in
 * its registry gets it registered. When nothing was lost it only reads: the parents item, the
 * parents' status items, and the registry chunks of the live ones with at most
 * {@link RECONCILE_READ_SLOTS} children (a bigger one gets the child registered again, unread).
 * Throws when a write fails (the supervisor gives the child a due entry and looks again).
 */
export async function reconcileChild(
  deps: ReleaseDeps,
  child: Job,
  now: number,
  log: Logger,
): Promise<{ released: number; registered: number }> {
  const edges = await deps.graph.parents({ child: child.id, incarnation: incarnationOf(child.createdAt) });
  if (!edges) {
    log.error('a job waits for parents but has no parents item; it cannot be released', { jobId: child.id });
    return { released: 0, registered: 0 };
  }
  const counted = new Set(child.parentsResolved ?? []);
  const open = edges.flatMap((_, i) => (counted.has(i) ? [] : [i]));
  const parents = await deps.graph.jobs(open.map((i) => (edges[i] as ParentEdge).id));
  let released = 0;
  const unregistered: number[] = [];
  await eachLimited(open, RELEASE_CONCURRENCY, async (index) => {
    const edge = edges[index] as ParentEdge;
    const parent = parents.get(edge.id);
    if (!parent) {
      log.error('a parent of a waiting job is gone; the job cannot be released', { jobId: child.id, parent: edge.id });
      return;
    }
    if (isTerminal(parent.state)) {
      const entry = entryOf(child, edge, index, edges.length);
      // refused: the parent's own release counted it since the child was read (nothing was lost)
      if ((await releaseEdge(deps, parent.id, parent.state, entry, now)) !== 'refused') released += 1;
      return;
    }
    // A big registry is not read (a read per chunk of 10 slots, for each of its children): the
    // child is registered again, and the duplicate entry is counted once (`rel`).
    const count = parent.childCount ?? 0;
    if (count > RECONCILE_READ_SLOTS) {
      unregistered.push(index);
      return;
    }
    const entries = await deps.graph.children({
      parent: parent.id,
      incarnation: incarnationOf(parent.createdAt),
      count,
      seal: false,
    });
    // an entry of an earlier job of the id (the parent outlived it) is not this child's
    const mine = incarnationOf(child.createdAt);
    const listed = entries.some(
      (e) => e.child === child.id && e.index === index && (e.incarnation === undefined || e.incarnation === mine),
    );
    if (!listed) unregistered.push(index);
  });
  if (unregistered.length > 0) await registerChild(deps, child, edges, unregistered, now);
  if (released + unregistered.length > 0) {
    log.warn('healed a waiting job whose registration was lost', {
      jobId: child.id,
      released,
      registered: unregistered.length,
    });
  }
  return { released, registered: unregistered.length };
}

/**
 * What a new child's parents say about its start, read with one batch read; with `self`, the
 * same read also fetches the job of that id, if it exists (a replay, or an id already taken).
 */
export async function startOfChild(
  graph: JobGraph,
  parents: readonly ParentEdge[],
  sameRequest: ReadonlySet<string> = new Set(),
  self?: string,
): Promise<{ start: ReturnType<typeof childStart>; missing: number[]; existing?: Job }> {
  const ids = parents.filter((p) => !sameRequest.has(p.id)).map((p) => p.id);
  const found = await graph.jobs(self === undefined ? ids : [...ids, self]);
  const missing = parents.flatMap((p, i) => (!sameRequest.has(p.id) && !found.has(p.id) ? [i] : []));
  const states = parents.map((p) => (sameRequest.has(p.id) ? undefined : found.get(p.id)?.state));
  const existing = self === undefined ? undefined : found.get(self);
  return { start: childStart(parents, states), missing, ...(existing ? { existing } : {}) };
}

/** Whether two `dependsOn` lists are the same edges, in the same order (an edge's index is its key). */
export function sameEdges(a: readonly ParentEdge[], b: readonly ParentEdge[]): boolean {
  return a.length === b.length && a.every((edge, i) => edge.id === b[i]?.id && edge.policy === b[i]?.policy);
}

/**
 * The handler's `ctx.parents()`: each parent's state and result, read only when called (the
 * parents item, then the parents' status items in one batch read). Without a graph, a call
 * rejects with a ConfigError that names what the worker lacks.
 */
export function parentsReader(
  graph: JobGraph | undefined,
  job: Pick<Job, 'id' | 'createdAt'>,
): () => Promise<Record<string, { state: JobState; result: unknown }>> {
  if (!graph) {
    return async () => {
      throw new ConfigError(
        'ctx.parents() needs a job graph, and this worker has none: pass `graph` to createWorker ' +
          "(defineJob's Lambda entry and the local platform pass one)",
      );
    };
  }
  return async () => {
    const edges = (await graph.parents({ child: job.id, incarnation: incarnationOf(job.createdAt) })) ?? [];
    const jobs = await graph.jobs(edges.map((e) => e.id));
    const out: Record<string, { state: JobState; result: unknown }> = {};
    for (const edge of edges) {
      const job = jobs.get(edge.id);
      if (job) out[edge.id] = { state: job.state, result: job.result ?? null };
    }
    return out;
  };
}

/**
 * Releases the children of a job an API call just ended (a cancel, a debounce's skip), inline;
 * when that fails, sends the job's message instead: its worker finds it finished and runs the
 * release. Never throws (the call's own write stands either way).
 */
export async function releaseOrHandOff(deps: ReleaseDeps, job: Job, now: number, log: Logger): Promise<void> {
  try {
    await releaseChildren(deps, job.id, now, log);
  } catch (error) {
    log.warn('could not release the children of an ended job; its worker will', errorFields(error));
    await dispatchNow(deps, job, now).catch((e: unknown) =>
      log.error('could not hand the ended job to its worker for its release', errorFields(e)),
    );
  }
}

/**
 * The worker's side: `afterEnd` runs the release of a job that just ended, or that a delivery
 * found finished with its release not complete. True when nothing is left to do (the message
 * may go); false when the release failed (keep the message: it comes back and runs it again).
 */
export function createRelease(deps: ReleaseDeps, clock: { now(): number }) {
  return {
    async afterEnd(jobId: string, log: Logger): Promise<boolean> {
      try {
        await releaseChildren(deps, jobId, clock.now(), log);
        return true;
      } catch (error) {
        log.error('could not release the children of a finished job; its message comes back', errorFields(error));
        return false;
      }
    },
    /** Whether a finished job, as a refused claim showed it, still has children to release. */
    pending: (job: Job) => needsRelease(job),
  };
}

/**
 * The edges of a job that waits for the children it invoked (`ctx.invoke`: each child is a
 * parent of the job in the graph, policy `ignore`), whose children may have ended before the
 * job waited: their release found it still running and was refused. Reads the children in pages
 * of {@link INVOKE_READ_PAGE} (one strongly consistent batch read each) and releases the edge of
 * each one that ended, with the same conditional write its own release makes (`rel.<index>`
 * counts it once, whoever writes first). Returns how many it released. Throws when a write fails.
 */
export async function releaseEndedInvokes(
  deps: ReleaseDeps,
  job: Pick<Job, 'id' | 'createdAt'>,
  edges: readonly { id: string; index: number }[],
  now: number,
): Promise<number> {
  let released = 0;
  for (let i = 0; i < edges.length; i += INVOKE_READ_PAGE) {
    const page = edges.slice(i, i + INVOKE_READ_PAGE);
    const found = await deps.graph.jobs(page.map((e) => e.id));
    await eachLimited(page, RELEASE_CONCURRENCY, async (edge) => {
      const child = found.get(edge.id);
      if (!child || !isTerminal(child.state)) return;
      const entry: ChildEntry = {
        child: job.id,
        policy: INVOKE_EDGE_POLICY,
        index: edge.index,
        incarnation: incarnationOf(job.createdAt),
      };
      if ((await releaseEdge(deps, child.id, child.state, entry, now)) !== 'refused') released += 1;
    });
  }
  return released;
}

/** Children an invoke's look reads per request (DynamoDB's BatchGetItem takes 100 keys). */
export const INVOKE_READ_PAGE = 100;
