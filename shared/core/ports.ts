import type { AttemptError, Job, JobMessage } from './job';

/** Outcome of trying to start an attempt. */
export type ClaimResult =
  /** We hold the lease: run the handler. */
  | { kind: 'claimed'; job: Job }
  /** Another worker holds a live lease: this delivery is a duplicate. */
  | { kind: 'busy'; job: Job }
  /** Succeeded, failed or cancelled already: nothing to do. */
  | { kind: 'finished'; job: Job }
  /** The last allowed attempt's lease expired without a result. */
  | { kind: 'exhausted'; job: Job }
  /** No such job (e.g. deleted by TTL): nothing to do. */
  | { kind: 'missing' };

/** Persistence of jobs and their leases. Every write after a claim is fenced by `token`. */
export interface JobStore {
  /** Writes a new job unless its id exists; returns the existing job otherwise. One conditional write. */
  create(job: Job): Promise<{ created: true } | { created: false; existing: Job }>;
  get(id: string): Promise<Job | undefined>;
  /** Removes a job that was written but could not be dispatched; only if no attempt started. */
  deleteUndispatched(id: string, payloadHash: string): Promise<boolean>;
  /** Starts an attempt: state → running, attempts + 1, token + 1, lease until `now + leaseMs`. */
  claim(input: { id: string; type: string; owner: string; now: number; leaseMs: number }): Promise<ClaimResult>;
  /** Extends the lease; throws LeaseLostError when the token is no longer ours. */
  heartbeat(input: { job: Job; now: number; leaseMs: number }): Promise<void>;
  succeed(input: { job: Job; now: number; result: unknown; expiresAt: number }): Promise<void>;
  retry(input: { job: Job; now: number; runAt: number; errors: AttemptError[] }): Promise<void>;
  /** Closes the attempt fenced by `job.leaseToken`: ours, or an expired one `claim` reported as `exhausted`. */
  fail(input: { job: Job; now: number; errors: AttemptError[]; expiresAt: number }): Promise<void>;
}

/** Sends job messages to a ready queue and adjusts the visibility of received ones. */
export interface JobQueue {
  send(queueUrl: string, message: JobMessage, delaySeconds?: number): Promise<void>;
  changeVisibility(queueUrl: string, receiptHandle: string, seconds: number): Promise<void>;
}

/** One-time schedules that hand a job to its ready queue later. */
export interface JobScheduler {
  /** Creates the schedule; an existing schedule of the same name counts as success. */
  scheduleJob(input: { jobId: string; fireAt: number; queueArn: string; message: JobMessage }): Promise<void>;
  /** Deletes it; returns false when it did not exist. */
  deleteJobSchedule(jobId: string): Promise<boolean>;
}
