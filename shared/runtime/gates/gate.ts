/**
 * What stands between a delivery and a run. A gate is one concern (a throttle's turn, the
 * concurrency slots, a debounce window, a `notBefore`...) with up to three hooks, run in the
 * order of the worker's gate list (see ./index.ts):
 *
 * - `beforeClaim`: may the job be claimed now? A job that has to wait is not claimed, so it
 *   spends no attempt.
 * - `afterClaim`: the attempt is claimed; may it run? A gate that says no gives the attempt back
 *   (refunded) before its handler runs.
 * - `finish`: the delivery is over (it ran, its claim was refused, it was given back, a later
 *   gate stopped it, or an error escaped it before its attempt ran): give back what this
 *   delivery took, in the reverse order of the list.
 *
 * Each delivery gets its own {@link GatePass}, so a gate keeps what it took (a slot's token, a
 * turn) in the pass's closure and never in the worker.
 */
import type { SQSRecord } from 'aws-lambda';
import type { Job, JobMessage, SkipReason } from '../../core/job';
import type { ClaimResult } from '../../core/ports';
import type { Logger } from '../../logger';
import type { WorkerKit } from '../delivery/kit';

/** What to tell the event source mapping about one record: delete it, or let it come back. */
export type Outcome = 'done' | 'retry';

/** One message of one job, as the gates and the claim see it. */
export interface Delivery {
  readonly id: string;
  readonly message: JobMessage;
  readonly record: SQSRecord;
  readonly log: Logger;
  readonly receiveCount: number;
  /**
   * One time for the gates' "is it due" and the claim's, so the two cannot disagree: fixed the
   * first time it is read.
   */
  readonly now: number;
  /** The job as the gates see it: read once for all of them (again only after {@link stale}). */
  job(): Promise<Job | undefined>;
  /** A write of ours was refused: the job changed since the read, and the next `job()` reads it again. */
  stale(): void;
}

/** A gate's answer before the claim. */
export type Verdict =
  /** Nothing to wait for here. */
  | { kind: 'go' }
  /** Not yet: the message is hidden until `until` (epoch ms) and comes back; nothing is written. */
  | { kind: 'later'; until: number }
  /** The job waits for something that sends it a message of its own: this one is done. */
  | { kind: 'wait'; why: string; fields?: Record<string, unknown> }
  /**
   * The job never runs: it ends `skipped` (one conditional write; `beforeSeq` conditions it on a
   * lower debounce seq). When the write is refused (the job changed), the delivery goes on
   * (`'go'`, with the job read again) or is done (`'done'`).
   */
  | {
      kind: 'skip';
      job: Job;
      reason: SkipReason;
      beforeSeq?: number;
      ifRefused: 'go' | 'done';
      note: string;
      fields?: Record<string, unknown>;
    }
  /** The gate dealt with the message itself (it set its visibility, say): answer this. */
  | { kind: 'answer'; outcome: Outcome };

/** A gate's answer once the attempt is claimed. */
export type AfterClaim =
  | { kind: 'go' }
  /**
   * The attempt may not run: it is given back before its handler runs, due again at `runAt`
   * (refunded, no error), and the message then comes back at `hideUntil` or is done.
   */
  | { kind: 'give-back'; runAt: number; what: string; hideUntil?: number };

/** How the delivery ended, for {@link GatePass.finish}. */
export type Ending =
  /** A later gate stopped it before the claim. */
  | { kind: 'stopped' }
  /** The claim was refused (the claim's answer says why). */
  | { kind: 'refused'; claim: Exclude<ClaimResult, { kind: 'claimed' }> }
  /** Another gate gave the claimed attempt back before it ran. */
  | { kind: 'given-back'; job: Job }
  /**
   * The claimed attempt ran (or failed to), and its outcome is known. `ended`: the attempt wrote
   * its end and the delivery is done (the job runs no more under this attempt's lease).
   */
  | { kind: 'ran'; job: Job; ended: boolean }
  /**
   * An error escaped the delivery before its attempt ran (in a gate's hook, the claim, or a give
   * back): its message is kept, but may never come back (another receipt of it deleted it), so a
   * pass gives back here what would otherwise outlive the job.
   */
  | { kind: 'failed' };

/** One delivery's pass through a gate: the hooks it has, sharing the state it keeps. */
export interface GatePass {
  beforeClaim?(): Promise<Verdict>;
  afterClaim?(claimed: Job): Promise<AfterClaim>;
  /** Gives back what the pass took; `'retry'` keeps the message (something could not be given back). */
  finish?(ending: Ending): Promise<Outcome | undefined>;
}

/** A gate of a job type: `pass` is called once per delivery. */
export interface Gate {
  readonly name: string;
  pass(delivery: Delivery): GatePass;
}

/**
 * Builds a gate for a worker's job type: undefined when the type's spec has nothing for it.
 * Throws a `ConfigError` when the worker lacks a port the gate needs.
 */
export type GateBuilder = (kit: WorkerKit) => Gate | undefined;

export const GO: Verdict = { kind: 'go' };
export const GO_ON: AfterClaim = { kind: 'go' };
