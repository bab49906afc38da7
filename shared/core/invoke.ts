/**
 * `ctx.invoke`, domain side: the id of an invoked child, the edge that brings its parent back,
 * and what the parent's journal records of the child's end. No AWS here: the child's start and
 * the parent's resume are `shared/dispatch/invoke.ts`, the handler's side
 * `shared/runtime/workflow.ts`; docs/workflows.md ("Invoke") explains the design and its costs.
 *
 * An invoke reuses the dependency release the other way round: the invoked child is created
 * with its parent in its registry of children (a `dependsOn` edge child → parent, policy
 * `ignore`), and the parent waits as a job with parents does (`waiting`, `pendingParents`). The
 * child's end releases that edge with the same conditional write; the write that brings the
 * parent's count to zero makes it due and sends its message.
 */
import { createHash } from 'node:crypto';
import type { ParentPolicy } from './dependencies';
import { JOB_ID_PATTERN } from './limits';
import type { JobState } from './states';

/**
 * The policy of an invoke's edge: a child that fails or is cancelled counts as done, so the
 * parent resumes and its invoke throws `InvokedJobFailedError` (the parent decides).
 */
export const INVOKE_EDGE_POLICY: ParentPolicy = 'ignore';

/**
 * The id of the child `ctx.invoke(name, …)` starts for job `parentId`: `<parentId>.<name>`
 * when that is a valid job id (at most 64 characters of `A-Z a-z 0-9 _ . -`), else
 * `inv.` + the first 40 hex digits of SHA-256 of the parent's id and the name. The same parent
 * and name always give the same id, so a replay finds the child it started. After a rerun
 * (`rerun` ≥ 1: the parent's reruns), an invoke the rerun dropped starts a new child,
 * `<parentId>.<name>.r<rerun>` (or the hash of the three), rather than find the old one.
 * @example
 * invokedChildId('order-1', 'charge'); // 'order-1.charge'
 * invokedChildId('order-1', 'charge', 2); // 'order-1.charge.r2'
 */
export function invokedChildId(parentId: string, name: string, rerun = 0): string {
  const readable = rerun > 0 ? `${parentId}.${name}.r${rerun}` : `${parentId}.${name}`;
  if (JOB_ID_PATTERN.test(readable)) return readable;
  const hashed = rerun > 0 ? `${parentId}\u0000${name}\u0000r${rerun}` : `${parentId}\u0000${name}`;
  return `inv.${createHash('sha256').update(hashed).digest('hex').slice(0, 40)}`;
}

/** An invoke's start as the parent's journal records it (`invoke#<name>`): its child, and the edge's index. */
export interface InvokeStart {
  id: string;
  /** The edge's key on the parent (`rel.<index>`): unique among the job's invokes. */
  index: number;
}

/**
 * A child's end as the parent's journal records it (`invoked#<name>`), the first time a run of
 * the parent found it finished: replays read it and never the child again.
 */
export type InvokeOutcome =
  | { state: 'succeeded'; result: unknown }
  | { state: Exclude<JobState, 'succeeded'>; error?: { name: string; message: string } };

/** Whether a job in `state` has ended (its invoke can return or throw). */
export function invokeEnded(state: JobState): boolean {
  return ['succeeded', 'failed', 'cancelled', 'expired', 'skipped'].includes(state);
}

/**
 * Invokes one run of a handler may await at once (the children of one wait). Each child counted
 * off the parent adds its edge's marker to the parent's status item until the parent resumes, so
 * the cap keeps that item well inside DynamoDB's 400 KB limit (about 150 KB at the cap).
 */
export const MAX_INVOKES_PER_WAIT = 10_000;
