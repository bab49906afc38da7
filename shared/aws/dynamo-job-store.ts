import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { jobDueAttributes } from '../core/due';
import type { AttemptError, Job, JobProgress } from '../core/job';
import { classifyRefusedClaim } from '../core/lease';
import type { ClaimResult, JobStore } from '../core/ports';
import { EARLY_START_TOLERANCE_MS } from '../core/scheduling';
import type { JobState } from '../core/states';
import { keys } from '../core/table';
import { LeaseLostError } from '../errors';
import { translateAwsError } from './errors';

type Item = Record<string, AttributeValue>;

const iso = (ms: number) => new Date(ms).toISOString();

/** Maps a job to its stored item (payload, result and errors as JSON text). */
export function toItem(job: Job): Item {
  return marshall(
    {
      pk: keys.job(job.id),
      id: job.id,
      type: job.type,
      state: job.state,
      payload: JSON.stringify(job.payload),
      payloadHash: job.payloadHash,
      attempts: job.attempts,
      maxAttempts: job.maxAttempts,
      createdAt: job.createdAt,
      updatedAt: job.updatedAt,
      runAt: job.runAt,
      startedAt: job.startedAt,
      finishedAt: job.finishedAt,
      leaseToken: job.leaseToken,
      leaseOwner: job.leaseOwner,
      leaseMessage: job.leaseMessage,
      leaseExpiresAt: job.leaseExpiresAt,
      errors: job.errors.length > 0 ? JSON.stringify(job.errors) : undefined,
      result: job.result === undefined ? undefined : JSON.stringify(job.result),
      backoff: job.backoff === undefined ? undefined : JSON.stringify(job.backoff),
      progress: job.progress === undefined ? undefined : JSON.stringify(job.progress),
      expiresAt: job.expiresAt,
      retries: job.retries,
      dispatchBy: job.dispatchBy,
      schedule: job.schedule,
      after: job.after,
      ...jobDueAttributes(job),
      gsi1pk: keys.byType(job.type, job.id),
      gsi1sk: keys.created(job.createdAt, job.id),
      gsi2pk: keys.byTypeState(job.type, job.state, job.id),
      gsi2sk: keys.created(job.createdAt, job.id),
    },
    { removeUndefinedValues: true },
  );
}

/** Maps a stored item back to a job. */
export function fromItem(item: Item): Job {
  const raw = unmarshall(item) as Record<string, unknown>;
  const errors = typeof raw.errors === 'string' ? (JSON.parse(raw.errors) as AttemptError[]) : [];
  const job: Job = {
    id: raw.id as string,
    type: raw.type as string,
    state: raw.state as JobState,
    payload: JSON.parse(raw.payload as string),
    payloadHash: raw.payloadHash as string,
    attempts: raw.attempts as number,
    maxAttempts: raw.maxAttempts as number,
    createdAt: raw.createdAt as string,
    updatedAt: raw.updatedAt as string,
    runAt: raw.runAt as string,
    leaseToken: (raw.leaseToken as number | undefined) ?? 0,
    errors,
  };
  if (typeof raw.startedAt === 'string') job.startedAt = raw.startedAt;
  if (typeof raw.finishedAt === 'string') job.finishedAt = raw.finishedAt;
  if (typeof raw.leaseOwner === 'string') job.leaseOwner = raw.leaseOwner;
  if (typeof raw.leaseMessage === 'string') job.leaseMessage = raw.leaseMessage;
  if (typeof raw.leaseExpiresAt === 'number') job.leaseExpiresAt = raw.leaseExpiresAt;
  if (typeof raw.result === 'string') job.result = JSON.parse(raw.result);
  if (typeof raw.expiresAt === 'number') job.expiresAt = raw.expiresAt;
  if (typeof raw.backoff === 'string') job.backoff = JSON.parse(raw.backoff);
  if (typeof raw.progress === 'string') job.progress = JSON.parse(raw.progress);
  if (typeof raw.retries === 'number') job.retries = raw.retries;
  if (typeof raw.dispatchBy === 'string') job.dispatchBy = raw.dispatchBy;
  if (typeof raw.schedule === 'string') job.schedule = raw.schedule;
  if (typeof raw.after === 'string') job.after = raw.after;
  const last = errors.at(-1);
  if (last) job.lastError = last;
  return job;
}

const N = (n: number): AttributeValue => ({ N: String(n) });
const S = (s: string): AttributeValue => ({ S: s });

/** `:dueBucket` and `:dueAt` for a job moving to `state` with `runAt` (see core/due.ts). */
function dueValues(id: string, state: 'retrying' | 'queued', runAt: number): Record<string, AttributeValue> {
  const due = jobDueAttributes({ id, state, runAt: iso(runAt) });
  return { ':dueBucket': S(due.dueBucket ?? ''), ':dueAt': N(due.dueAt ?? runAt) };
}

/**
 * {@link JobStore} on a DynamoDB table shaped by `JOB_TABLE`. Every state change is one
 * conditional write; writes after a claim are conditioned on the fencing token.
 *
 * @example
 * const store = new DynamoJobStore(new DynamoDBClient({}), 'orrery-jobs');
 */
export class DynamoJobStore implements JobStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  private key(id: string): Item {
    return { pk: S(keys.job(id)) };
  }

  async create(job: Job): Promise<{ created: true } | { created: false; existing: Job }> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: toItem(job),
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { created: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException && error.Item) {
        return { created: false, existing: fromItem(error.Item) };
      }
      return translateAwsError(error, 'DynamoDB PutItem (create job)');
    }
  }

  async get(id: string): Promise<Job | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: this.key(id), ConsistentRead: true }),
      );
      return out.Item ? fromItem(out.Item) : undefined;
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem');
    }
  }

  async deleteUndispatched(id: string, payloadHash: string): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: this.key(id),
          ConditionExpression: 'payloadHash = :h AND attempts = :zero AND #state IN (:queued, :scheduled)',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':h': S(payloadHash),
            ':zero': N(0),
            ':queued': S('queued'),
            ':scheduled': S('scheduled'),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateAwsError(error, 'DynamoDB DeleteItem');
    }
  }

  async claim({
    id,
    type,
    owner,
    now,
    leaseMs,
    attemptTimeoutMs,
    messageId,
  }: {
    id: string;
    type: string;
    owner: string;
    now: number;
    leaseMs: number;
    attemptTimeoutMs?: number;
    messageId?: string;
  }): Promise<ClaimResult> {
    const due = jobDueAttributes(
      { id, state: 'running', runAt: iso(now), leaseExpiresAt: now + leaseMs },
      { claimedAt: now, ...(attemptTimeoutMs !== undefined ? { attemptTimeoutMs } : {}) },
    );
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(id),
          UpdateExpression:
            'SET #state = :running, attempts = attempts + :one, leaseToken = leaseToken + :one, leaseOwner = :owner, ' +
            'leaseExpiresAt = :exp, leaseMessage = :msg, startedAt = :now, updatedAt = :now, gsi2pk = :gsi2pk, ' +
            'dueBucket = :dueBucket, dueAt = :dueAt',
          ConditionExpression:
            'attribute_exists(pk) AND #type = :type AND attempts < maxAttempts AND ' +
            '(#state IN (:scheduled, :queued, :retrying) OR (#state = :running AND leaseExpiresAt < :nowMs)) AND ' +
            // not a scheduled job whose schedule fired early, nor a never-started one past its dispatchBy
            '(#state <> :scheduled OR runAt <= :earliest) AND ' +
            '(attribute_not_exists(dispatchBy) OR attempts > :zero OR dispatchBy >= :now)',
          ExpressionAttributeNames: { '#state': 'state', '#type': 'type' },
          ExpressionAttributeValues: {
            ':type': S(type),
            ':running': S('running'),
            ':scheduled': S('scheduled'),
            ':queued': S('queued'),
            ':retrying': S('retrying'),
            ':one': N(1),
            ':owner': S(owner),
            ':msg': S(messageId ?? '-'),
            ':exp': N(now + leaseMs),
            ':now': S(iso(now)),
            ':nowMs': N(now),
            ':gsi2pk': S(keys.byTypeState(type, 'running', id)),
            ':dueBucket': S(due.dueBucket ?? ''),
            ':dueAt': N(due.dueAt ?? now),
            ':earliest': S(iso(now + EARLY_START_TOLERANCE_MS)),
            ':zero': N(0),
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const job = fromItem(out.Attributes ?? {});
      return { kind: 'claimed', job };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        if (!error.Item) return { kind: 'missing' };
        const current = fromItem(error.Item);
        // Our own claim, applied on an earlier try whose response was lost (the SDK retried
        // it): owners are unique per claim call, so this lease is ours.
        if (current.state === 'running' && current.leaseOwner === owner) return { kind: 'claimed', job: current };
        return classifyRefusedClaim(current, now);
      }
      return translateAwsError(error, 'DynamoDB UpdateItem (claim)');
    }
  }

  /**
   * A write fenced by the job's lease token and `running` state. When `state` is given, the
   * write moves the job to it and rewrites the state index key to match.
   */
  private async fenced(
    job: Job,
    operation: string,
    update: string,
    values: Record<string, AttributeValue>,
    state?: JobState,
  ): Promise<void> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(job.id),
          UpdateExpression: update,
          ConditionExpression: 'leaseToken = :token AND #state = :running',
          ExpressionAttributeNames: {
            '#state': 'state',
            ...(update.includes('#result') ? { '#result': 'result' } : {}),
          },
          ExpressionAttributeValues: {
            ...values,
            ':token': N(job.leaseToken),
            ':running': S('running'),
            ...(state ? { ':to': S(state), ':gsi2pk': S(keys.byTypeState(job.type, state, job.id)) } : {}),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        // A retry of our own write whose first try was applied (response lost): only our token
        // can have moved the job to this state, so the write is done.
        const current = error.Item ? fromItem(error.Item) : undefined;
        if (state && current && current.leaseToken === job.leaseToken && current.state === state) return;
        throw new LeaseLostError(job.id, job.leaseToken);
      }
      translateAwsError(error, `DynamoDB UpdateItem (${operation})`);
    }
  }

  async heartbeat({ job, now, leaseMs }: { job: Job; now: number; leaseMs: number }): Promise<void> {
    await this.fenced(job, 'heartbeat', 'SET leaseExpiresAt = :exp', { ':exp': N(now + leaseMs) });
  }

  async progress({ job, progress }: { job: Job; progress: JobProgress }): Promise<void> {
    await this.fenced(job, 'progress', 'SET progress = :progress', { ':progress': S(JSON.stringify(progress)) });
  }

  async succeed({
    job,
    now,
    result,
    expiresAt,
  }: {
    job: Job;
    now: number;
    result: unknown;
    expiresAt: number;
  }): Promise<void> {
    const values: Record<string, AttributeValue> = { ':now': S(iso(now)), ':ttl': N(expiresAt) };
    let update = 'SET #state = :to, finishedAt = :now, updatedAt = :now, expiresAt = :ttl, gsi2pk = :gsi2pk';
    if (result !== undefined) {
      update += ', #result = :result';
      values[':result'] = S(JSON.stringify(result));
    }
    await this.fenced(
      job,
      'succeed',
      `${update} REMOVE leaseOwner, leaseExpiresAt, dueBucket, dueAt`,
      values,
      'succeeded',
    );
  }

  async retry({
    job,
    now,
    runAt,
    errors,
  }: {
    job: Job;
    now: number;
    runAt: number;
    errors: AttemptError[];
  }): Promise<void> {
    await this.fenced(
      job,
      'retry',
      'SET #state = :to, runAt = :runAt, updatedAt = :now, errors = :errors, gsi2pk = :gsi2pk, ' +
        'dueBucket = :dueBucket, dueAt = :dueAt REMOVE leaseOwner, leaseExpiresAt',
      {
        ':runAt': S(iso(runAt)),
        ':now': S(iso(now)),
        ':errors': S(JSON.stringify(errors)),
        ...dueValues(job.id, 'retrying', runAt),
      },
      'retrying',
    );
  }

  async fail({
    job,
    now,
    errors,
    expiresAt,
  }: {
    job: Job;
    now: number;
    errors: AttemptError[];
    expiresAt: number;
  }): Promise<void> {
    await this.fenced(
      job,
      'fail',
      'SET #state = :to, finishedAt = :now, updatedAt = :now, errors = :errors, expiresAt = :ttl, gsi2pk = :gsi2pk ' +
        'REMOVE leaseOwner, leaseExpiresAt, dueBucket, dueAt',
      { ':now': S(iso(now)), ':errors': S(JSON.stringify(errors)), ':ttl': N(expiresAt) },
      'failed',
    );
  }

  async expire({ job, now, expiresAt }: { job: Job; now: number; expiresAt: number }): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(job.id),
          UpdateExpression:
            'SET #state = :expired, finishedAt = :now, updatedAt = :now, expiresAt = :ttl, gsi2pk = :gsi2pk ' +
            'REMOVE dueBucket, dueAt',
          ConditionExpression: '#state IN (:scheduled, :queued) AND attempts = :zero AND dispatchBy < :now',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':expired': S('expired'),
            ':scheduled': S('scheduled'),
            ':queued': S('queued'),
            ':zero': N(0),
            ':now': S(iso(now)),
            ':ttl': N(expiresAt),
            ':gsi2pk': S(keys.byTypeState(job.type, 'expired', job.id)),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateAwsError(error, 'DynamoDB UpdateItem (expire)');
    }
  }
}
