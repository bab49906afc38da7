/**
 * In-memory stand-ins for the domain ports, for unit tests (no network).
 *
 * `FakeJobStore` enforces the same conditions as the DynamoDB adapter
 * (`shared/aws/dynamo-job-store.ts`): a claim is one conditional write, and every write after
 * a claim is fenced by the lease token and the `running` state. Jobs are stored as JSON text
 * and rebuilt on read, as the adapter does, so callers never share objects with the store.
 */
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { PlatformConfig } from '../../shared/config';
import type { AttemptError, Job, JobMessage, JobProgress } from '../../shared/core/job';
import { classifyRefusedClaim } from '../../shared/core/lease';
import type { ClaimResult, JobQueue, JobScheduler, JobStore } from '../../shared/core/ports';
import { earlyByMs, isPastDispatchBy } from '../../shared/core/scheduling';
import { CLAIMABLE_STATES } from '../../shared/core/states';
import { LeaseLostError } from '../../shared/errors';
import type { LogSink } from '../../shared/logger';

const iso = (ms: number) => new Date(ms).toISOString();

/** JSON round trip, like the adapter's marshall/unmarshall: drops `undefined` fields, copies deeply. */
function stored(job: Job): Job {
  return JSON.parse(JSON.stringify(job)) as Job;
}

/** Rebuilds a job as `fromItem` does: `lastError` is derived from the error history. */
function read(job: Job): Job {
  const copy = stored(job);
  delete copy.lastError;
  const last = copy.errors.at(-1);
  if (last) copy.lastError = last;
  return copy;
}

type StoreMethod =
  | 'create'
  | 'get'
  | 'deleteUndispatched'
  | 'claim'
  | 'heartbeat'
  | 'progress'
  | 'succeed'
  | 'retry'
  | 'fail'
  | 'expire';

export class FakeJobStore implements JobStore {
  private readonly jobs = new Map<string, Job>();
  private readonly failures = new Map<StoreMethod, unknown[]>();
  /** Every call, in order, with its method name. */
  readonly calls: { method: StoreMethod; id: string }[] = [];

  /** Puts a job in the store as is, bypassing every condition. */
  seed(job: Job): void {
    this.jobs.set(job.id, stored(job));
  }

  /** The stored job (a copy), or undefined. Does not count as a call. */
  peek(id: string): Job | undefined {
    const job = this.jobs.get(id);
    return job ? read(job) : undefined;
  }

  /** Makes the next `times` calls of `method` throw `error` before touching the store. */
  failNext(method: StoreMethod, error: unknown, times = 1): void {
    const queue = this.failures.get(method) ?? [];
    for (let i = 0; i < times; i++) queue.push(error);
    this.failures.set(method, queue);
  }

  private enter(method: StoreMethod, id: string): void {
    this.calls.push({ method, id });
    const queue = this.failures.get(method);
    if (queue && queue.length > 0) throw queue.shift();
  }

  async create(job: Job): Promise<{ created: true } | { created: false; existing: Job }> {
    this.enter('create', job.id);
    const existing = this.jobs.get(job.id);
    if (existing) return { created: false, existing: read(existing) };
    this.jobs.set(job.id, stored(job));
    return { created: true };
  }

  async get(id: string): Promise<Job | undefined> {
    this.enter('get', id);
    return this.peek(id);
  }

  async deleteUndispatched(id: string, payloadHash: string): Promise<boolean> {
    this.enter('deleteUndispatched', id);
    const job = this.jobs.get(id);
    const ok =
      job !== undefined &&
      job.payloadHash === payloadHash &&
      job.attempts === 0 &&
      (job.state === 'queued' || job.state === 'scheduled');
    if (ok) this.jobs.delete(id);
    return ok;
  }

  async claim(input: { id: string; type: string; owner: string; now: number; leaseMs: number }): Promise<ClaimResult> {
    this.enter('claim', input.id);
    const old = this.jobs.get(input.id);
    if (!old) return { kind: 'missing' };
    // A comparison with a missing attribute is false in a DynamoDB condition.
    const expired = old.state === 'running' && old.leaseExpiresAt !== undefined && old.leaseExpiresAt < input.now;
    const allowed =
      old.type === input.type &&
      old.attempts < old.maxAttempts &&
      (CLAIMABLE_STATES.includes(old.state) || expired) &&
      earlyByMs(old, input.now) === 0 &&
      !isPastDispatchBy(old, input.now);
    if (!allowed) return classifyRefusedClaim(read(old), input.now);
    const next: Job = {
      ...stored(old),
      state: 'running',
      attempts: old.attempts + 1,
      leaseToken: old.leaseToken + 1,
      leaseOwner: input.owner,
      leaseExpiresAt: input.now + input.leaseMs,
      startedAt: iso(input.now),
      updatedAt: iso(input.now),
    };
    this.jobs.set(next.id, stored(next));
    return { kind: 'claimed', job: read(next) };
  }

  /** Condition `leaseToken = :token AND #state = :running`, else LeaseLostError. */
  private fenced(method: StoreMethod, job: Job, update: (current: Job) => void): void {
    this.enter(method, job.id);
    const current = this.jobs.get(job.id);
    if (!current || current.leaseToken !== job.leaseToken || current.state !== 'running') {
      throw new LeaseLostError(job.id, job.leaseToken);
    }
    const next = stored(current);
    update(next);
    this.jobs.set(next.id, stored(next));
  }

  async heartbeat({ job, now, leaseMs }: { job: Job; now: number; leaseMs: number }): Promise<void> {
    this.fenced('heartbeat', job, (j) => {
      j.leaseExpiresAt = now + leaseMs;
    });
  }

  async progress({ job, progress }: { job: Job; progress: JobProgress }): Promise<void> {
    this.fenced('progress', job, (j) => {
      j.progress = { ...progress };
    });
  }

  async succeed(input: { job: Job; now: number; result: unknown; expiresAt: number }): Promise<void> {
    this.fenced('succeed', input.job, (j) => {
      j.state = 'succeeded';
      j.finishedAt = iso(input.now);
      j.updatedAt = iso(input.now);
      j.expiresAt = input.expiresAt;
      if (input.result !== undefined) j.result = input.result;
      delete j.leaseOwner;
      delete j.leaseExpiresAt;
    });
  }

  async retry(input: { job: Job; now: number; runAt: number; errors: AttemptError[] }): Promise<void> {
    this.fenced('retry', input.job, (j) => {
      j.state = 'retrying';
      j.runAt = iso(input.runAt);
      j.updatedAt = iso(input.now);
      j.errors = input.errors;
      delete j.leaseOwner;
      delete j.leaseExpiresAt;
    });
  }

  async fail(input: { job: Job; now: number; errors: AttemptError[]; expiresAt: number }): Promise<void> {
    this.fenced('fail', input.job, (j) => {
      j.state = 'failed';
      j.finishedAt = iso(input.now);
      j.updatedAt = iso(input.now);
      j.errors = input.errors;
      j.expiresAt = input.expiresAt;
      delete j.leaseOwner;
      delete j.leaseExpiresAt;
    });
  }

  /** The adapter's condition: `scheduled`/`queued`, no attempt started, `dispatchBy` passed. */
  async expire(input: { job: Job; now: number; expiresAt: number }): Promise<boolean> {
    this.enter('expire', input.job.id);
    const current = this.jobs.get(input.job.id);
    if (!current || !isPastDispatchBy(current, input.now)) return false;
    this.jobs.set(current.id, {
      ...stored(current),
      state: 'expired',
      finishedAt: iso(input.now),
      updatedAt: iso(input.now),
      expiresAt: input.expiresAt,
    });
    return true;
  }
}

/** Records what was sent and every visibility change; `failNext` makes the next call throw. */
export class FakeJobQueue implements JobQueue {
  readonly sent: { queueUrl: string; message: JobMessage; delaySeconds: number | undefined }[] = [];
  readonly visibility: { queueUrl: string; receiptHandle: string; seconds: number }[] = [];
  private readonly failures: { method: 'send' | 'changeVisibility'; error: unknown }[] = [];

  failNext(method: 'send' | 'changeVisibility', error: unknown): void {
    this.failures.push({ method, error });
  }

  private check(method: 'send' | 'changeVisibility'): void {
    const i = this.failures.findIndex((f) => f.method === method);
    if (i >= 0) {
      const [failure] = this.failures.splice(i, 1);
      throw failure?.error;
    }
  }

  async send(queueUrl: string, message: JobMessage, delaySeconds?: number): Promise<void> {
    this.check('send');
    this.sent.push({ queueUrl, message: { ...message }, delaySeconds });
  }

  async changeVisibility(queueUrl: string, receiptHandle: string, seconds: number): Promise<void> {
    this.check('changeVisibility');
    this.visibility.push({ queueUrl, receiptHandle, seconds });
  }
}

/** One-time schedules by name; creating an existing one succeeds, as in the adapter. */
export class FakeJobScheduler implements JobScheduler {
  readonly schedules = new Map<string, { fireAt: number; queueArn: string; message: JobMessage }>();

  async scheduleJob(input: { name: string; fireAt: number; queueArn: string; message: JobMessage }): Promise<void> {
    if (!this.schedules.has(input.name)) {
      this.schedules.set(input.name, {
        fireAt: input.fireAt,
        queueArn: input.queueArn,
        message: { ...input.message },
      });
    }
  }

  async deleteJobSchedule(name: string): Promise<boolean> {
    return this.schedules.delete(name);
  }
}

/** A log sink that keeps every line, parsed. */
export function captureLogs(): { sink: LogSink; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>), lines };
}

/** A job as the API writes it: queued, no attempt yet. Override any field. */
export function newJob(
  overrides: Partial<Job> & Pick<Job, 'id' | 'type'>,
  now = Date.parse('2026-01-01T00:00:00Z'),
): Job {
  return {
    state: 'queued',
    payload: {},
    payloadHash: `hash-${overrides.id}`,
    attempts: 0,
    maxAttempts: 3,
    createdAt: iso(now),
    updatedAt: iso(now),
    runAt: iso(now),
    leaseToken: 0,
    errors: [],
    ...overrides,
  };
}

/** Platform configuration with a route for each given type. */
export function testConfig(types: readonly string[], overrides: Partial<PlatformConfig> = {}): PlatformConfig {
  const routes = Object.fromEntries(
    types.map((type) => [
      type,
      {
        queueUrl: `https://sqs.eu-west-1.amazonaws.com/123456789012/orrery-${type}`,
        queueArn: `arn:aws:sqs:eu-west-1:123456789012:orrery-${type}`,
      },
    ]),
  );
  return {
    tableName: 'orrery-jobs',
    routes,
    scheduleGroup: 'orrery',
    schedulerRoleArn: 'arn:aws:iam::123456789012:role/orrery-scheduler',
    retentionDays: 30,
    logLevel: 'silent',
    ...overrides,
  };
}

/** An SQS record as Lambda's event source mapping delivers it. `body` objects are JSON-encoded. */
export function sqsRecord(
  body: string | object,
  options: { messageId?: string; receiveCount?: number; receiptHandle?: string } = {},
): SQSRecord {
  const messageId = options.messageId ?? 'msg-1';
  return {
    messageId,
    receiptHandle: options.receiptHandle ?? `rh-${messageId}`,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: '1767225600000',
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: '1767225600000',
    },
    messageAttributes: {},
    md5OfBody: 'd41d8cd98f00b204e9800998ecf8427e',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:orrery-test',
    awsRegion: 'eu-west-1',
  };
}

export function sqsEvent(...records: SQSRecord[]): SQSEvent {
  return { Records: records };
}
