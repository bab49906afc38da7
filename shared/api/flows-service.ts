import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { Clock } from '../core/clock';
import { pastRetention } from '../core/control';
import { type ChildEntry, type FlowRecord, findCycle, type JobGraph, parentEdges } from '../core/dependencies';
import { enqueueRequestSchema, jobIdSchema } from '../core/enqueue';
import type { Job } from '../core/job';
import type { JobState } from '../core/states';
import { incarnationOf } from '../core/table';
import { parseOrThrow } from '../core/validation';
import { sameEdges } from '../dispatch/release';
import { ConfigError, ConflictError, NotFoundError, ValidationError } from '../errors';
import type { Logger } from '../logger';
import { mapWithConcurrency } from './concurrency';
import type { JobsService, PendingSend } from './jobs-service';

/** Most jobs in one flow. */
export const MAX_FLOW_NODES = 100;

/** A flow's item outlives its creation by this long: past the longest its jobs can live. */
const FLOW_RETENTION_DAYS = 2 * 366;

/** Writes of one flow level in flight at once. */
const FLOW_CONCURRENCY = 10;

/** `POST /flows`: a DAG of jobs, each an enqueue request with a required `id`. */
export const flowRequestSchema = z
  .object({
    /** The flow's id; a replay with the same id and nodes completes it. @default a random UUID */
    id: jobIdSchema.optional(),
    jobs: z
      .array(z.object({ ...enqueueRequestSchema.shape, id: jobIdSchema }).strict())
      .min(1, `must hold 1 to ${MAX_FLOW_NODES} jobs`)
      .max(MAX_FLOW_NODES, `must hold 1 to ${MAX_FLOW_NODES} jobs`),
  })
  .strict();

export type FlowRequest = z.output<typeof flowRequestSchema>;

/** A node of `GET /flows/{id}`. */
export interface FlowNodeView {
  id: string;
  type: string;
  /** Undefined when the job is gone (past its retention). */
  state: JobState | null;
  dependsOn: { id: string; onParentFailure: string }[];
  /** Jobs of the flow that depend on this one. */
  children: string[];
}

export interface FlowView {
  id: string;
  createdAt: string;
  nodes: FlowNodeView[];
}

/**
 * `POST /flows` and `GET /flows/{id}`. A flow is checked whole before anything is written
 * (schemas, types, payloads, unique ids, parents in the flow or existing, no cycle): any 400
 * writes nothing. Its jobs are then written level by level, parents before children, each as an
 * enqueue with `dependsOn` writes it (its parents item, its status item, its registrations), so
 * a flow cut short never has a job whose parents are not written; its roots' messages are sent
 * only after every job is written, and the flow's item last. A replay with the same id and jobs
 * finds them written (200) and completes what is missing.
 */
export class FlowsService {
  constructor(
    private readonly deps: { jobs: JobsService; graph?: JobGraph; clock: Clock; log: Logger; retentionDays: number },
  ) {}

  /** The body with each job's `payloadRef` read (./enqueue/payload-ref.ts); a body without any as it is. */
  private async withUploads(body: unknown): Promise<unknown> {
    const jobs = (body as { jobs?: unknown } | null)?.jobs;
    if (!Array.isArray(jobs)) return body;
    const read = await Promise.all(jobs.map((job, i) => this.deps.jobs.withUploadedPayload(job, `jobs.${i}`)));
    return { ...(body as object), jobs: read };
  }

  private graph(): JobGraph {
    if (!this.deps.graph) throw new ConfigError('flows need the job graph (ApiDeps.graph)');
    return this.deps.graph;
  }

  async create(body: unknown, by?: string): Promise<{ created: boolean; flow: FlowView }> {
    // a job's `payloadRef` (an upload) is read into its payload and checked as an enqueue's: a key
    // that is not an upload's is a 400, never kept as the job's reference
    const request = parseOrThrow(flowRequestSchema, await this.withUploads(body), { message: 'invalid flow' });
    const graph = this.graph();
    const flowId = request.id ?? randomUUID();
    const nodes = request.jobs;
    const index = new Map<string, number>();
    nodes.forEach((node, i) => {
      if (index.has(node.id)) {
        throw new ValidationError(
          `job id ${node.id} appears twice in the flow`,
          [{ path: `jobs.${i}.id`, message: 'duplicate id in the flow' }],
          'duplicate_node',
        );
      }
      index.set(node.id, i);
    });
    const hashes: string[] = [];
    const edges = nodes.map((node, i) => {
      hashes.push(this.deps.jobs.validate(node, `jobs.${i}`).payloadHash);
      return node.dependsOn ? parentEdges(node.dependsOn, node.id, `jobs.${i}.dependsOn`) : [];
    });
    const parentsOf = new Map(nodes.map((node, i) => [node.id, (edges[i] ?? []).map((e) => e.id)]));
    const cycle = findCycle(parentsOf);
    if (cycle) {
      const at = index.get(cycle[0] as string) ?? 0;
      throw new ValidationError(
        `the flow has a cycle: ${[...cycle, cycle[0]].join(' → ')}`,
        [{ path: `jobs.${at}.dependsOn`, message: `on the cycle ${[...cycle, cycle[0]].join(' → ')}` }],
        'flow_cycle',
      );
    }
    const outside = [...new Set(edges.flat().flatMap((e) => (index.has(e.id) ? [] : [e.id])))];
    const existing = outside.length > 0 ? await graph.jobs(outside) : new Map();
    const unknown = nodes.flatMap((_, i) =>
      (edges[i] ?? []).flatMap((e, j) =>
        index.has(e.id) || existing.has(e.id) ? [] : [{ path: `jobs.${i}.dependsOn.${j}`, message: 'no such job' }],
      ),
    );
    if (unknown.length > 0) {
      throw new ValidationError(
        'the flow names parents that are not in it and do not exist',
        unknown,
        'unknown_parent',
      );
    }

    // A job id taken by another job (another type or payload) is a 409 before anything is written.
    const taken = await graph.jobs(nodes.map((n) => n.id));
    const live = (i: number) => {
      const other = taken.get(nodes[i]?.id ?? '');
      return other && !pastRetention(other, this.deps.clock.now()) ? other : undefined;
    };
    // A job of the flow that exists with the same type and payload is a replay only if its parents
    // are the same too (one read of its parents item, on a replay only).
    const sameJobs = nodes.flatMap((_, i) => (live(i)?.payloadHash === hashes[i] ? [i] : []));
    const storedParents = await Promise.all(
      sameJobs.map((i) => {
        const job = live(i) as Job;
        return graph.parents({ child: job.id, incarnation: incarnationOf(job.createdAt) });
      }),
    );
    const otherParents = new Set(sameJobs.filter((i, k) => !sameEdges(storedParents[k] ?? [], edges[i] ?? [])));
    const conflicts = nodes.flatMap((_, i) => {
      const other = live(i);
      return other && (other.payloadHash !== hashes[i] || otherParents.has(i)) ? [i] : [];
    });
    if (conflicts.length > 0) {
      throw new ConflictError(
        `job ids of the flow already exist with a different type, payload or parents: ${conflicts.map((i) => nodes[i]?.id).join(', ')}`,
        'id_conflict',
        { jobIds: conflicts.map((i) => nodes[i]?.id), paths: conflicts.map((i) => `jobs.${i}.id`) },
      );
    }

    // Level by level: a node's parents in the flow are written before it.
    const levels: number[][] = [];
    const level = new Map<string, number>();
    const depth = (id: string): number => {
      const known = level.get(id);
      if (known !== undefined) return known;
      const parents = (parentsOf.get(id) ?? []).filter((p) => index.has(p));
      const d = parents.length === 0 ? 0 : Math.max(...parents.map(depth)) + 1;
      level.set(id, d);
      return d;
    };
    nodes.forEach((node, i) => {
      const d = depth(node.id);
      levels[d] = [...(levels[d] ?? []), i];
    });
    // A parent the flow creates gets its children in the flow at its creation: its registry's
    // chunks first (one write per 10 children), then its status item with their count; each
    // child then counts it as pending without registering. A parent that exists already (a
    // replay, a job outside the flow) is registered with as by any enqueue.
    // Every job the flow creates is created at `now0`, fixed here: a parent's registry, written
    // before its children, names each child's incarnation (a job of the flow that exists already
    // keeps its own).
    const now0 = this.deps.clock.now();
    const ttl = Math.floor(now0 / 1000) + FLOW_RETENTION_DAYS * 86_400;
    const createdNow = incarnationOf(new Date(now0).toISOString());
    const childrenOf = new Map<string, ChildEntry[]>();
    nodes.forEach((node, i) => {
      const existing = live(i);
      const incarnation = existing ? incarnationOf(existing.createdAt) : createdNow;
      (edges[i] ?? []).forEach((edge, at) => {
        if (!index.has(edge.id) || taken.has(edge.id)) return;
        const entry: ChildEntry = {
          child: node.id,
          policy: edge.policy,
          index: at,
          parents: edges[i]?.length ?? 0,
          incarnation,
        };
        childrenOf.set(edge.id, [...(childrenOf.get(edge.id) ?? []), entry]);
      });
    });
    let created = false;
    const sends: PendingSend[] = [];
    for (const indexes of levels) {
      await mapWithConcurrency(indexes ?? [], FLOW_CONCURRENCY, async (i) => {
        const node = nodes[i] as FlowRequest['jobs'][number];
        const children = childrenOf.get(node.id) ?? [];
        // the registry of the job this write creates: its incarnation is the time it is created at
        const at = now0;
        if (children.length > 0) {
          await graph.putChildren({ parent: node.id, incarnation: createdNow, entries: children, expiresAt: ttl });
        }
        const registered = new Set((edges[i] ?? []).flatMap((e) => (childrenOf.has(e.id) ? [e.id] : [])));
        const out = await this.deps.jobs.write(node, {
          at,
          parentsChecked: true,
          // its messages are sent after the flow's last writes, which may fail: no place is held meanwhile
          placeAtEnqueue: false,
          ...(by !== undefined ? { by } : {}),
          ...(registered.size > 0 ? { sameRequest: registered } : {}),
          ...(children.length > 0 ? { childCount: children.length } : {}),
        });
        if (out.created) created = true;
        if (out.send) sends.push(out.send);
      });
    }
    const now = this.deps.clock.now();
    const record: FlowRecord = {
      id: flowId,
      createdAt: new Date(now).toISOString(),
      nodes: nodes.map((node, i) => ({ id: node.id, type: node.type, dependsOn: edges[i] ?? [] })),
    };
    const previous = await graph.flow(flowId);
    if (!previous) {
      await graph.putFlow({ ...record, expiresAt: Math.floor(now / 1000) + FLOW_RETENTION_DAYS * 86_400 });
      created = true;
    }
    const failures = await this.deps.jobs.sendPending(sends);
    const failed = failures.find((e) => e !== undefined);
    if (failed) throw failed;
    this.deps.log.info('flow written', { flowId, jobs: nodes.length, created });
    return { created, flow: await this.view(previous ?? record) };
  }

  async get(id: string): Promise<FlowView> {
    const record = await this.graph().flow(id);
    if (!record) throw new NotFoundError(`flow ${JSON.stringify(id)} not found`, 'flow_not_found');
    return this.view(record);
  }

  private async view(record: FlowRecord): Promise<FlowView> {
    const jobs = await this.graph().jobs(record.nodes.map((n) => n.id));
    const children = new Map<string, string[]>();
    for (const node of record.nodes) {
      for (const edge of node.dependsOn) children.set(edge.id, [...(children.get(edge.id) ?? []), node.id]);
    }
    return {
      id: record.id,
      createdAt: record.createdAt,
      nodes: record.nodes.map((node) => ({
        id: node.id,
        type: node.type,
        state: jobs.get(node.id)?.state ?? null,
        dependsOn: node.dependsOn.map((e) => ({ id: e.id, onParentFailure: e.policy })),
        children: children.get(node.id) ?? [],
      })),
    };
  }
}
