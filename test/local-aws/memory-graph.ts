/**
 * In-memory {@link JobGraph} over a {@link FakeJobStore}, with the DynamoDB adapter's conditions
 * (`shared/aws/dynamo-job-graph.ts`); test/contract/job-graph.contract.ts holds the two to the
 * same cases. Every method is synchronous inside, so each is one atomic "write", as a
 * conditional write is.
 */
import {
  CHILDREN_CHUNK,
  type ChildEntry,
  type EdgeOutcome,
  type EdgeRelease,
  type FlowRecord,
  type JobGraph,
  type ParentEdge,
  parentFailedError,
} from '../../shared/core/dependencies';
import type { Job } from '../../shared/core/job';
import { isTerminal, type JobState } from '../../shared/core/states';
import { incarnationOf } from '../../shared/core/table';
import type { FakeJobStore } from './memory-fakes';

type Slot = ChildEntry | 'tombstone';

export type GraphMethod =
  | 'putParents'
  | 'parents'
  | 'addChild'
  | 'fillSlot'
  | 'children'
  | 'release'
  | 'markReleased'
  | 'jobs'
  | 'putFlow'
  | 'putChildren'
  | 'flow';

/** The key an incarnation's items are held under here, as the adapter's keys name it. */
const owner = (id: string, incarnation: string) => `${id}#${incarnation}`;

export class FakeJobGraph implements JobGraph {
  /** Parents items and registries by job id and incarnation, as the adapter keys them. */
  private readonly parentItems = new Map<string, ParentEdge[]>();
  private readonly slots = new Map<string, Map<number, Slot>>();
  /** The edges counted on each waiting child (`rel` on the adapter's status item). */
  private readonly rel = new Map<string, Set<number>>();
  private readonly failures = new Map<GraphMethod, unknown[]>();
  /** Every call, in order. */
  readonly calls: { method: GraphMethod; id: string }[] = [];

  constructor(private readonly store: FakeJobStore) {}

  /** Makes the next `times` calls of `method` throw `error`. */
  failNext(method: GraphMethod, error: unknown, times = 1): void {
    const queue = this.failures.get(method) ?? [];
    for (let i = 0; i < times; i++) queue.push(error);
    this.failures.set(method, queue);
  }

  private enter(method: GraphMethod, id: string): void {
    this.calls.push({ method, id });
    const queue = this.failures.get(method);
    if (queue && queue.length > 0) throw queue.shift();
  }

  private put(job: Job): void {
    this.store.seed(job, this.store.due(job.id) ?? {});
  }

  async putParents({
    child,
    incarnation,
    parents,
  }: {
    child: string;
    incarnation: string;
    parents: readonly ParentEdge[];
    expiresAt: number;
  }) {
    this.enter('putParents', child);
    this.parentItems.set(owner(child, incarnation), JSON.parse(JSON.stringify(parents)) as ParentEdge[]);
  }

  async parents({ child, incarnation }: { child: string; incarnation: string }): Promise<ParentEdge[] | undefined> {
    this.enter('parents', child);
    const edges = this.parentItems.get(owner(child, incarnation));
    return edges ? (JSON.parse(JSON.stringify(edges)) as ParentEdge[]) : undefined;
  }

  async addChild({
    parent,
  }: {
    parent: string;
  }): Promise<{ slot: number; incarnation: string } | { slot?: undefined; parent?: Job }> {
    this.enter('addChild', parent);
    const job = this.store.peek(parent);
    if (!job || isTerminal(job.state)) return job ? { parent: job } : {};
    const slot = (job.childCount ?? 0) + 1;
    this.put({ ...job, childCount: slot });
    return { slot, incarnation: incarnationOf(job.createdAt) };
  }

  private registryOf(parent: string, incarnation: string): Map<number, Slot> {
    const key = owner(parent, incarnation);
    const slots = this.slots.get(key) ?? new Map<number, Slot>();
    this.slots.set(key, slots);
    return slots;
  }

  async fillSlot({
    parent,
    incarnation,
    slot,
    entry,
  }: {
    parent: string;
    incarnation: string;
    slot: number;
    entry: ChildEntry;
    expiresAt: number;
  }) {
    this.enter('fillSlot', parent);
    const slots = this.registryOf(parent, incarnation);
    const found = slots.get(slot);
    // as the adapter: a slot holding this very entry is a replay of this fill
    if (found) return found !== 'tombstone' && found.child === entry.child && found.index === entry.index;
    slots.set(slot, { ...entry });
    return true;
  }

  async putChildren({
    parent,
    incarnation,
    entries,
  }: {
    parent: string;
    incarnation: string;
    entries: readonly ChildEntry[];
    expiresAt: number;
  }) {
    this.enter('putChildren', parent);
    const slots = this.registryOf(parent, incarnation);
    entries.forEach((entry, i) => {
      if (!slots.has(i + 1)) slots.set(i + 1, { ...entry });
    });
  }

  async children({
    parent,
    incarnation,
    count,
    seal = true,
  }: {
    parent: string;
    incarnation: string;
    count: number;
    seal?: boolean;
  }) {
    this.enter('children', parent);
    const slots = this.registryOf(parent, incarnation);
    const entries: ChildEntry[] = [];
    for (let slot = 1; slot <= count; slot++) {
      const value = slots.get(slot);
      if (value === undefined) {
        if (seal) slots.set(slot, 'tombstone');
      } else if (value !== 'tombstone') entries.push({ ...value });
    }
    return entries;
  }

  async release(input: {
    child: string;
    index: number;
    outcome: EdgeOutcome;
    parent: string;
    parentState: JobState;
    now: number;
    expiresAt: number;
    /** Same outcome either way here: the fake's two writes are one atomic step. */
    only?: boolean;
    incarnation?: string;
  }): Promise<EdgeRelease> {
    const { child, index, outcome, parent, parentState, now, expiresAt, incarnation } = input;
    this.enter('release', child);
    const job = this.store.peek(child);
    // as the adapter's `createdAt = :createdAt`: a later job that took the id is nothing to do
    if (!job || (incarnation !== undefined && incarnationOf(job.createdAt) !== incarnation)) return { kind: 'refused' };
    const counted = this.rel.get(child) ?? new Set<number>(job.parentsResolved ?? []);
    if (
      job.state !== 'waiting' ||
      job.pendingParents === undefined ||
      counted.has(index) ||
      (outcome.kind === 'resolve' && job.pendingParents <= 0)
    ) {
      if (job.state === 'waiting' && job.pendingParents === 0) return this.wake(job, now);
      return { kind: 'refused', job };
    }
    const at = new Date(now).toISOString();
    if (outcome.kind === 'end') {
      const { pendingParents: _pending, parentsResolved: _resolved, ...rest } = job;
      const ended: Job = {
        ...rest,
        state: outcome.state,
        finishedAt: at,
        updatedAt: at,
        expiresAt,
        errors: [parentFailedError(parent, parentState, now)],
      };
      this.rel.delete(child);
      this.put(ended);
      return { kind: 'ended', job: this.store.peek(child) as Job };
    }
    counted.add(index);
    this.rel.set(child, counted);
    const next: Job = {
      ...job,
      pendingParents: job.pendingParents - 1,
      parentsResolved: [...counted].sort((a, b) => a - b),
      updatedAt: at,
    };
    this.put(next);
    if (next.pendingParents === 0) return this.wake(next, now);
    return { kind: 'counted', job: this.store.peek(child) as Job };
  }

  private wake(job: Job, now: number): EdgeRelease {
    const current = this.store.peek(job.id);
    if (current?.state !== 'waiting' || current.pendingParents !== 0) {
      return { kind: 'refused', ...(current ? { job: current } : {}) };
    }
    const { pendingParents: _pending, parentsResolved: _resolved, ...rest } = current;
    this.rel.delete(job.id);
    const at = new Date(now).toISOString();
    this.put({
      ...rest,
      state: 'queued',
      runAt: new Date(Math.max(Date.parse(current.runAt), now)).toISOString(),
      updatedAt: at,
    });
    return { kind: 'ready', job: this.store.peek(job.id) as Job };
  }

  async markReleased({ parent, count }: { parent: string; count: number }): Promise<void> {
    this.enter('markReleased', parent);
    const job = this.store.peek(parent);
    if (!job || (job.childrenReleased ?? -1) >= count) return;
    this.put({ ...job, childrenReleased: count });
  }

  private readonly flows = new Map<string, FlowRecord>();

  async putFlow(flow: FlowRecord & { expiresAt: number }): Promise<void> {
    this.enter('putFlow', flow.id);
    const { expiresAt: _ttl, ...record } = flow;
    this.flows.set(flow.id, JSON.parse(JSON.stringify(record)) as FlowRecord);
  }

  async flow(id: string): Promise<FlowRecord | undefined> {
    this.enter('flow', id);
    const record = this.flows.get(id);
    return record ? (JSON.parse(JSON.stringify(record)) as FlowRecord) : undefined;
  }

  async jobs(ids: readonly string[]): Promise<Map<string, Job>> {
    this.enter('jobs', ids[0] ?? '');
    const out = new Map<string, Job>();
    for (const id of ids) {
      const job = this.store.peek(id);
      if (job) out.set(id, job);
    }
    return out;
  }

  /** The parents item of the job's current incarnation (undefined without a job or an item), for tests. Not a call. */
  storedParents(child: string): ParentEdge[] | undefined {
    const job = this.store.peek(child);
    const edges = job ? this.parentItems.get(owner(child, incarnationOf(job.createdAt))) : undefined;
    return edges ? (JSON.parse(JSON.stringify(edges)) as ParentEdge[]) : undefined;
  }

  /** The registry slots of a parent's current incarnation (a copy), for tests. Not a call. */
  registry(parent: string): (ChildEntry | 'tombstone' | undefined)[] {
    const job = this.store.peek(parent);
    const slots = job ? this.slots.get(owner(parent, incarnationOf(job.createdAt))) : undefined;
    const count = job?.childCount ?? 0;
    return Array.from({ length: count }, (_, i) => slots?.get(i + 1));
  }
}

/** The chunk a slot is in (for tests that look at the adapter's items). */
export const chunkIndex = (slot: number) => Math.floor((slot - 1) / CHILDREN_CHUNK);
