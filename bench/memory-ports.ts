/**
 * The cheapest possible in-memory ports, so CPU measured around `createWorker` and the API
 * handler is our runtime's, not an emulator's or a fake's. No copies, no conditions beyond
 * what the worker needs to run a job once: not a test double (see test/support/fakes.ts).
 */
import type { AttemptError, Job, JobMessage } from '../shared/core/job';
import type {
  ClaimResult,
  JobQueue,
  JobScheduler,
  JobStore,
  QueueEntry,
  QueueEntryOutcome,
} from '../shared/core/ports';

export class MemoryJobStore implements JobStore {
  readonly jobs = new Map<string, Job>();

  async create(job: Job): Promise<{ created: true } | { created: false; existing: Job }> {
    const existing = this.jobs.get(job.id);
    if (existing) return { created: false, existing };
    this.jobs.set(job.id, job);
    return { created: true };
  }

  async get(id: string): Promise<Job | undefined> {
    return this.jobs.get(id);
  }

  async claim(input: { id: string; owner: string; now: number; leaseMs: number }): Promise<ClaimResult> {
    const old = this.jobs.get(input.id);
    if (!old) return { kind: 'missing' };
    const iso = new Date(input.now).toISOString();
    const job: Job = {
      ...old,
      state: 'running',
      attempts: old.attempts + 1,
      leaseToken: old.leaseToken + 1,
      leaseOwner: input.owner,
      leaseExpiresAt: input.now + input.leaseMs,
      startedAt: iso,
      updatedAt: iso,
    };
    this.jobs.set(job.id, job);
    return { kind: 'claimed', job };
  }

  async heartbeat(): Promise<void> {}
  async progress(): Promise<void> {}

  async succeed(input: { job: Job; now: number; result: unknown; expiresAt: number }): Promise<void> {
    this.finish(input.job, 'succeeded', input.now);
  }

  async retry(input: { job: Job; now: number; runAt: number; errors: AttemptError[] }): Promise<void> {
    this.finish(input.job, 'retrying', input.now);
  }

  async fail(input: { job: Job; now: number; errors: AttemptError[]; expiresAt: number }): Promise<void> {
    this.finish(input.job, 'failed', input.now);
  }

  async suspend(input: { job: Job; now: number }): Promise<void> {
    this.finish(input.job, 'waiting', input.now);
  }

  async wake(input: { id: string }): Promise<Job | undefined> {
    return this.jobs.get(input.id);
  }

  private finish(job: Job, state: Job['state'], now: number): void {
    const stored = this.jobs.get(job.id);
    if (stored) {
      stored.state = state;
      stored.updatedAt = new Date(now).toISOString();
    }
  }
}

export class NullQueue implements JobQueue {
  sent = 0;
  async send(_queueUrl: string, _message: JobMessage): Promise<void> {
    this.sent += 1;
  }
  async sendBatch(_queueUrl: string, entries: readonly QueueEntry[]): Promise<QueueEntryOutcome[]> {
    this.sent += entries.length;
    return entries.map(() => ({ sent: true }));
  }
  async changeVisibility(): Promise<void> {}
}

export class NullScheduler implements JobScheduler {
  async scheduleJob(): Promise<void> {}
  async deleteJobSchedule(): Promise<boolean> {
    return true;
  }
}
