/**
 * `ctx.invoke` at run time: the start of an invoked child, and the look at the children a
 * handler awaits (see shared/core/invoke.ts, docs/workflows.md "Invoke").
 *
 * A child is started as a flow starts a job whose child the same request creates: its registry of
 * children (one chunk item, naming the parent at slot 1, policy `ignore`) is written before its
 * status item, which is created `queued` with `childCount` = 1, and then its message is sent. So
 * a child that exists always knows its parent, and its end releases the parent with the
 * dependency release (`releaseChildren`), whatever worker runs it.
 */
import { CHILDREN_CHUNK, type JobGraph } from '../core/dependencies';
import { INVOKE_EDGE_POLICY } from '../core/invoke';
import type { Job } from '../core/job';
import { payloadHash } from '../core/payload-hash';
import type { JobStore } from '../core/ports';
import { isTerminal } from '../core/states';
import { incarnationOf } from '../core/table';
import { ConflictError } from '../errors';
import { dispatch } from './dispatch';
import { INVOKE_READ_PAGE, type ReleaseDeps } from './release';

/** What a child's start needs: the release's deps (graph, queues) and the job store. */
export interface InvokeDeps extends ReleaseDeps {
  store: JobStore;
}

/** The child an invoke starts. */
export interface InvokedChild {
  id: string;
  type: string;
  payload: unknown;
  /** The edge's index on the parent (its journal's `invoke#<name>` entry). */
  index: number;
  /** @default 3 (the job type's default policy: the parent's worker does not know the child's spec) */
  maxAttempts?: number;
}

/** Registry items are kept as long as a journal's entries: the parent may wait up to a year. */
const REGISTRY_RETENTION_DAYS = 2 * 366;

/** A job type's default attempts, for a child started without `maxAttempts`. */
export const INVOKE_DEFAULT_MAX_ATTEMPTS = 3;

/**
 * Starts `child` for `parent`, once: a replay finds it created and writes nothing more than the
 * refused create (1 WU), or hands a child not yet started to its queue again. A child of that id
 * that another request created (an id given in the invoke's options) is registered with the
 * parent as a `dependsOn` child is (2 WU). Throws a ConflictError when the id holds a job of
 * another type or payload. Writes: its registry chunk (1 WU), its status item (as any job), one
 * SQS send.
 */
export async function startInvoked(deps: InvokeDeps, parent: Job, child: InvokedChild, now: number): Promise<void> {
  const nowIso = new Date(now).toISOString();
  const job: Job = {
    id: child.id,
    type: child.type,
    state: 'queued',
    payload: child.payload,
    payloadHash: payloadHash(child.type, child.payload),
    attempts: 0,
    maxAttempts: child.maxAttempts ?? INVOKE_DEFAULT_MAX_ATTEMPTS,
    createdAt: nowIso,
    updatedAt: nowIso,
    runAt: nowIso,
    leaseToken: 0,
    errors: [],
    childCount: 1,
  };
  const entry = {
    child: parent.id,
    policy: INVOKE_EDGE_POLICY,
    index: child.index,
    incarnation: incarnationOf(parent.createdAt),
  };
  const expiresAt = Math.floor(now / 1000) + REGISTRY_RETENTION_DAYS * 86_400;
  await deps.graph.putChildren({ parent: job.id, incarnation: incarnationOf(nowIso), entries: [entry], expiresAt });
  const written = await deps.store.create(job);
  if (written.created) {
    await dispatch(deps, job, now);
    return;
  }
  const existing = written.existing;
  if (existing.payloadHash !== job.payloadHash) {
    throw new ConflictError(
      `invoke of job ${child.id}: that id holds a job of another type or payload`,
      'id_conflict',
      { jobId: child.id },
    );
  }
  // Finished: the parent's look after its suspend write counts it (its release found the parent running).
  if (isTerminal(existing.state)) return;
  if (!(await listsParent(deps.graph, existing, parent, child.index))) {
    // A registration refused (the child ended meanwhile) is counted by the parent's look.
    const added = await deps.graph.addChild({ parent: existing.id });
    if (added.slot !== undefined) {
      await deps.graph.fillSlot({
        parent: existing.id,
        incarnation: added.incarnation,
        slot: added.slot,
        entry,
        expiresAt,
      });
    }
  }
  // a lost send: hand it on again (a spare message is harmless: the lease lets one delivery run)
  if (existing.state === 'queued' && existing.attempts === 0) await dispatch(deps, existing, now);
}

/** Whether the first registry chunk of `child` names `parent` at `index` (this invoke started it). */
async function listsParent(graph: JobGraph, child: Job, parent: Job, index: number): Promise<boolean> {
  const count = Math.min(child.childCount ?? 0, CHILDREN_CHUNK);
  if (count === 0) return false;
  const entries = await graph.children({
    parent: child.id,
    incarnation: incarnationOf(child.createdAt),
    count,
    seal: false,
  });
  return entries.some((e) => e.child === parent.id && e.index === index);
}

/**
 * Reads the children a handler's invokes ask for, in pages: the ids asked for in the same turn of
 * the event loop (a `Promise.all` of invokes) are read together, {@link INVOKE_READ_PAGE} per
 * strongly consistent batch read, never all at once.
 * @example
 * const look = childReader(graph);
 * const [a, b] = await Promise.all([look('p.a'), look('p.b')]); // one BatchGetItem
 */
export function childReader(graph: JobGraph): (id: string) => Promise<Job | undefined> {
  let queued: { id: string; resolve: (job: Job | undefined) => void; reject: (e: unknown) => void }[] = [];
  const flush = async () => {
    const asked = queued;
    queued = [];
    for (let i = 0; i < asked.length; i += INVOKE_READ_PAGE) {
      const page = asked.slice(i, i + INVOKE_READ_PAGE);
      try {
        const found = await graph.jobs([...new Set(page.map((a) => a.id))]);
        for (const a of page) a.resolve(found.get(a.id));
      } catch (error) {
        for (const a of page) a.reject(error);
      }
    }
  };
  return (id) =>
    new Promise<Job | undefined>((resolve, reject) => {
      if (queued.length === 0) setImmediate(() => void flush());
      queued.push({ id, resolve, reject });
    });
}
