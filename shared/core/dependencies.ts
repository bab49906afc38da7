/**
 * Job dependencies (`dependsOn`), domain side: the edge policies, what a parent's end means for
 * each child, and the port that keeps the graph. No AWS here: the DynamoDB adapter is
 * `shared/aws/dynamo-job-graph.ts`, the release that walks a finished parent's children
 * `shared/dispatch/release.ts`, and docs/workflows.md explains the design and its write units.
 *
 * Nothing polls. A child waits (`waiting`, with `pendingParents`) until each parent's terminal
 * write is followed by that parent's release, which decrements the child's count with one
 * conditional write per edge; the write that reaches zero makes the child due and sends its
 * message.
 */
import { ValidationError } from '../errors';
import type { AttemptError, Job } from './job';
import type { JobState } from './states';

/** Most parents of one job. */
export const MAX_PARENTS = 1000;

/**
 * Children slots per chunk item of a parent's registry (`job#<parent>#<incarnation>#children#<k>`): a full
 * chunk of entries with ids of up to 55 characters (a slot is about 36 bytes + the id) stays
 * under 1 KB, so a write of one slot, billed at the whole item's size, is one write unit (with
 * 64-character ids a full chunk is about 1.1 KB: its last slot or two cost 2 units).
 */
export const CHILDREN_CHUNK = 10;

/**
 * What a child does when a parent ends without succeeding (failed, cancelled, expired, skipped):
 * `fail` ends the child `failed`, `cancel` ends it `cancelled`, `ignore` counts the parent as done.
 */
export const PARENT_POLICIES = ['fail', 'ignore', 'cancel'] as const;
export type ParentPolicy = (typeof PARENT_POLICIES)[number];

/** @default 'fail' */
export const DEFAULT_PARENT_POLICY: ParentPolicy = 'fail';

/** One parent of a job, as its parents item keeps it. */
export interface ParentEdge {
  id: string;
  policy: ParentPolicy;
}

/** A parent as a request names it: its id, or its id with a policy. */
export type ParentRef = string | { id: string; onParentFailure?: ParentPolicy | undefined };

/**
 * The edges of a `dependsOn` list, policies defaulted. Refuses (400) a duplicate parent
 * (`duplicate_parent`) and the job itself (`self_dependency`), naming `<path>.<i>`.
 */
export function parentEdges(refs: readonly ParentRef[], self: string | undefined, path = 'dependsOn'): ParentEdge[] {
  const seen = new Set<string>();
  return refs.map((ref, i) => {
    const edge: ParentEdge =
      typeof ref === 'string'
        ? { id: ref, policy: DEFAULT_PARENT_POLICY }
        : { id: ref.id, policy: ref.onParentFailure ?? DEFAULT_PARENT_POLICY };
    if (edge.id === self) {
      throw new ValidationError(
        'a job cannot depend on itself',
        [{ path: `${path}.${i}`, message: 'is the job’s own id' }],
        'self_dependency',
      );
    }
    if (seen.has(edge.id)) {
      throw new ValidationError(
        `parent ${edge.id} is named twice`,
        [{ path: `${path}.${i}`, message: 'duplicate parent' }],
        'duplicate_parent',
      );
    }
    seen.add(edge.id);
    return edge;
  });
}

/** One child in a parent's registry: which job, under which policy, at which index of its parents. */
export interface ChildEntry {
  /** The child's id. */
  child: string;
  policy: ParentPolicy;
  /** The parent's index in the child's `dependsOn`: the key of the edge on the child. */
  index: number;
  /** How many parents the child has: with one, its release is one write. @default unknown */
  parents?: number;
  /**
   * The child's incarnation (`incarnationOf` its `createdAt`, core/table.ts): the release touches that job
   * only, never a later job that took the id once the child was past its retention (the parent
   * may outlive it: a long sleep, a far-future runAt). Every registration writes it; an entry
   * without it was written before it existed, and its release checks the id alone.
   * @default unknown
   */
  incarnation?: string;
}

/** What a parent's end does to one child. */
export type EdgeOutcome =
  /** Counted as done: the child's pending count goes down by one. */
  | { kind: 'resolve' }
  /** The child ends `failed` or `cancelled` without running. */
  | { kind: 'end'; state: 'failed' | 'cancelled' };

/** The outcome of an edge once its parent is in `parentState` (a terminal state), by policy. */
export function edgeOutcome(parentState: JobState, policy: ParentPolicy): EdgeOutcome {
  if (parentState === 'succeeded' || policy === 'ignore') return { kind: 'resolve' };
  return { kind: 'end', state: policy === 'cancel' ? 'cancelled' : 'failed' };
}

/** The error a child ended by its parent records (`lastError`, reason `parent_failed`). */
export function parentFailedError(parentId: string, parentState: JobState, at: number): AttemptError {
  return {
    attempt: 0,
    at: new Date(at).toISOString(),
    reason: 'parent_failed',
    name: 'ParentFailedError',
    message: `parent job ${parentId} ended ${parentState}`,
  };
}

/**
 * What a new child is at enqueue, from its parents as they are then: `waiting` for `pending`
 * parents, or already `queued` (every parent done), or ended by a parent's policy.
 */
export type ChildStart =
  | { kind: 'waiting'; pending: number; resolved: number[] }
  | { kind: 'ready' }
  | { kind: 'ended'; state: 'failed' | 'cancelled'; parent: string; parentState: JobState };

/**
 * Decides a new child's start from its parents' states (`undefined` for a parent not yet
 * written, created in the same request: it counts as pending). `resolved` lists the indexes of
 * parents already counted.
 */
export function childStart(edges: readonly ParentEdge[], states: readonly (JobState | undefined)[]): ChildStart {
  const resolved: number[] = [];
  let pending = 0;
  for (const [i, edge] of edges.entries()) {
    const state = states[i];
    if (state === undefined || !isFinished(state)) {
      pending += 1;
      continue;
    }
    const outcome = edgeOutcome(state, edge.policy);
    if (outcome.kind === 'end') return { kind: 'ended', state: outcome.state, parent: edge.id, parentState: state };
    resolved.push(i);
  }
  return pending === 0 ? { kind: 'ready' } : { kind: 'waiting', pending, resolved };
}

function isFinished(state: JobState): boolean {
  return ['succeeded', 'failed', 'cancelled', 'expired', 'skipped'].includes(state);
}

/** Whether a finished parent still has children to release (its release never completed). */
export function needsRelease(job: Pick<Job, 'state' | 'childCount' | 'childrenReleased'>): boolean {
  return isFinished(job.state) && (job.childCount ?? 0) > (job.childrenReleased ?? 0);
}

/** Finds a cycle in a graph given as `node → parents`; returns its nodes in order, or undefined. */
export function findCycle(parentsOf: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    const mark = state.get(node);
    if (mark === 'done') return undefined;
    if (mark === 'open') return path.slice(path.indexOf(node));
    state.set(node, 'open');
    path.push(node);
    for (const parent of parentsOf.get(node) ?? []) {
      if (!parentsOf.has(parent)) continue;
      const cycle = visit(parent);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of parentsOf.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

/** A flow (`POST /flows`) as its item keeps it: its nodes and their edges. */
export interface FlowRecord {
  id: string;
  createdAt: string;
  nodes: { id: string; type: string; dependsOn: ParentEdge[] }[];
}

/** What one release write did to a child. */
export type EdgeRelease =
  /** Counted; the child still waits for other parents. */
  | { kind: 'counted'; job: Job }
  /** Counted, and it was the last: the child is due (`queued`); its message is still to send. */
  | { kind: 'ready'; job: Job }
  /** The child ended by the edge's policy (`failed`, `cancelled`). */
  | { kind: 'ended'; job: Job }
  /**
   * Refused: the edge was counted before (a replay), or the child no longer waits (cancelled,
   * ended by another parent). `job` is the child as it is, when it exists and is the incarnation
   * the edge names (none for a later job that took the id: nothing to do for this edge).
   */
  | { kind: 'refused'; job?: Job };

/**
 * The dependency graph on the job table: each child's parents, each parent's registry of
 * children, and the release writes on a waiting child. Every write is conditional, so a replay
 * of any of them (a worker that died half way, a message that came back) changes nothing twice.
 */
export interface JobGraph {
  /**
   * Writes the child's parents item (its `dependsOn`), before its status item. It belongs to the
   * child's incarnation (`incarnationOf` the `createdAt` the child is created with): a later job
   * of the same id has parents of its own. One write.
   */
  putParents(input: {
    child: string;
    incarnation: string;
    parents: readonly ParentEdge[];
    expiresAt: number;
  }): Promise<void>;
  /** The parents of that incarnation of the child, or undefined when it has none (or the item is gone). One read. */
  parents(input: { child: string; incarnation: string }): Promise<ParentEdge[] | undefined>;
  /**
   * The first half of a registration: the parent's `childCount` + 1, only while the parent exists
   * and is not finished; returns the new count (the child's slot) and the parent's incarnation
   * (whose registry the slot is in), from the same write. Refused when the parent is finished or
   * missing (`parent`: the job as it is): the caller resolves the edge itself. One write.
   */
  addChild(input: {
    parent: string;
  }): Promise<{ slot: number; incarnation: string } | { slot?: undefined; parent?: Job }>;
  /**
   * The second half: the entry into `slot` of the parent's registry, only while the slot is empty.
   * False when the parent's release sealed it first (the parent is finished by then): the caller
   * resolves the edge itself. True when the slot already holds this entry (a replay of a fill
   * that applied, its response lost). One write.
   */
  fillSlot(input: {
    parent: string;
    incarnation: string;
    slot: number;
    entry: ChildEntry;
    expiresAt: number;
  }): Promise<boolean>;
  /**
   * Registers children known when their parent is created (a flow): `entries` go into slots
   * 1..n of the parent's registry, each only if that slot is empty; the parent's status item is
   * then created with `childCount` = n. One write per chunk of {@link CHILDREN_CHUNK} slots.
   */
  putChildren(input: {
    parent: string;
    incarnation: string;
    entries: readonly ChildEntry[];
    expiresAt: number;
  }): Promise<void>;
  /**
   * The registry of a finished parent, slots 1..`count`; every empty slot is sealed (a
   * tombstone), so a registration still in flight for it is refused and resolves its edge
   * itself. One strongly consistent batch read, plus one write per empty slot.
   */
  children(input: {
    parent: string;
    incarnation: string;
    count: number;
    /** Seal the empty slots (the release does); false only reads (a view). @default true */
    seal?: boolean;
  }): Promise<ChildEntry[]>;
  /**
   * The release of one edge on a waiting child: by `outcome`, its pending count - 1 (and, at
   * zero, state `queued`, due at `max(runAt, now)`), or the child ended. Refused when that edge
   * was counted already or the child does not wait. Then, when the child as it is waits with
   * nothing pending (a release that died before the wake), it finishes the wake.
   */
  release(input: {
    child: string;
    index: number;
    outcome: EdgeOutcome;
    parent: string;
    parentState: JobState;
    now: number;
    expiresAt: number;
    /**
     * The child has this parent only: the count and the wake are tried as one write (when the
     * child is due by now), saving the second. @default false
     */
    only?: boolean;
    /**
     * The child's incarnation (its registry entry's): every write of the release is conditioned
     * on the child's `createdAt` being that incarnation's, so a later job that took the id is
     * refused (`refused`, with no job: nothing to do for this edge). @default any (an entry
     * written before entries named it)
     */
    incarnation?: string;
  }): Promise<EdgeRelease>;
  /** Records that the parent's children up to slot `count` were released. One write. */
  markReleased(input: { parent: string; count: number }): Promise<void>;
  /** Writes a flow's item (`POST /flows`), after its nodes. One write. */
  putFlow(flow: FlowRecord & { expiresAt: number }): Promise<void>;
  /** A flow's item, or undefined. One read. */
  flow(id: string): Promise<FlowRecord | undefined>;
  /** Status items of `ids` (missing ones left out): one strongly consistent batch read per 100. */
  jobs(ids: readonly string[]): Promise<Map<string, Job>>;
}
