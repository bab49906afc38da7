/**
 * The writes that end a job or an attempt: `succeed`, `retry` and `fail` (or hold; fenced by the lease),
 * and `expire` and `skip` (a job that never started). Pure builders of each write's expression,
 * with the cost it records; the store sends them.
 */
import type { AttributeValue, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { type AttemptError, errorSummary, type Job } from '../../core/job';
import { addCost, type JobCost, NO_COST } from '../../core/metrics';
import type { ExpireInput, FailInput, RetryInput, SkipInput, SucceedInput } from '../../core/ports';
import { keys } from '../../core/table';
import { keyOf, N, S } from '../attributes';
import { errorItemOf, itemBytes, statusWriteUnits, summaryMessageRoom, writeUnits } from '../job-item';
import type { FencedUpdate } from './fenced';

const iso = (ms: number) => new Date(ms).toISOString();

/** The job as an attempt-ending write leaves it: `changes` applied, the lease owner and expiry removed. */
export function ended(job: Job, changes: Partial<Job>): Job {
  const { leaseOwner: _owner, leaseExpiresAt: _expires, ...rest } = job;
  return { ...rest, ...changes };
}

/**
 * `after` with the error summary the write stores for `errors`' last entry, to size the item: its
 * message takes the room {@link summaryMessageRoom} gives, measured with the lease on (`leased`).
 */
function withSummary(after: Job, leased: Job, errors: readonly AttemptError[]): Job {
  const last = errors.at(-1);
  if (!last) return after;
  return { ...after, errors: [...after.errors, errorSummary(last, summaryMessageRoom(leased, last))] };
}

/**
 * The update of a retry or fail that records the attempt's error: its summary on the status
 * item and one more in the count. Nothing when no error is given.
 */
function errorUpdate(
  errors: readonly AttemptError[],
  after: Job,
): { set: string; values: Record<string, AttributeValue> } {
  const last = errors.at(-1);
  if (!last) return { set: '', values: {} };
  const summary = errorSummary(last, summaryMessageRoom(after, last));
  return {
    set: ', lastError = :lastError, errorCount = if_not_exists(errorCount, :zero) + :one',
    values: { ':lastError': S(JSON.stringify(summary)), ':zero': N(0), ':one': N(1) },
  };
}

/**
 * The job's cost after an attempt-ending write from `job` to `after`: the cost stored so far,
 * what the delivery spent before the write (`delivery`), and the write itself, plus the error
 * item a retry or fail writes after it (one request each, write units estimated from sizes).
 */
export function costAfter(
  job: Job,
  after: Job,
  delivery: JobCost,
  errors: readonly AttemptError[],
  expiresAt: number,
): JobCost {
  const before = addCost(job.cost ?? NO_COST, delivery);
  const last = errors.at(-1);
  let own: JobCost = { requests: 1, writeUnits: statusWriteUnits(job, { ...after, cost: before }) };
  if (last) {
    const item = errorItemOf(job, job.errors.length + 1, last, expiresAt);
    own = addCost(own, { requests: 1, writeUnits: writeUnits(itemBytes(item)) });
  }
  return addCost(before, own);
}

/** `succeeded`, with the result when there is one; returns the whole item (its children count). */
export function succeedUpdate({ job, now, result, expiresAt, writer, cost }: SucceedInput): FencedUpdate {
  const values: Record<string, AttributeValue> = { ':now': S(iso(now)), ':ttl': N(expiresAt) };
  let set = 'finishedAt = :now, updatedAt = :now, expiresAt = :ttl';
  if (result !== undefined) {
    set += ', #result = :result';
    values[':result'] = S(JSON.stringify(result));
  }
  const after = ended(job, {
    state: 'succeeded',
    finishedAt: iso(now),
    updatedAt: iso(now),
    expiresAt,
    lastWriter: writer,
    ...(result !== undefined ? { result } : {}),
  });
  return {
    operation: 'succeed',
    set,
    remove: 'leaseOwner, leaseExpiresAt',
    values,
    end: { state: 'succeeded', writer, ...(cost ? { cost: costAfter(job, after, cost, [], expiresAt) } : {}) },
    all: true,
  };
}

/** `retrying` at `runAt`, the attempt given back on a refund, the attempt's error counted. */
export function retryUpdate({ job, now, runAt, errors, expiresAt, writer, refund, cost }: RetryInput): FencedUpdate {
  const attempts = refund ? Math.max(0, job.attempts - 1) : job.attempts;
  const changes: Partial<Job> = {
    attempts,
    state: 'retrying',
    runAt: iso(runAt),
    updatedAt: iso(now),
    lastWriter: writer,
  };
  // the summary's room is measured with the lease still on the item, as the next claim puts it back
  const leased = { ...job, ...changes };
  const error = errorUpdate(errors, leased);
  return {
    operation: 'retry',
    set: `runAt = :runAt, updatedAt = :now${refund ? ', attempts = :attempts' : ''}${error.set}`,
    remove: 'leaseOwner, leaseExpiresAt',
    values: {
      ':runAt': S(iso(runAt)),
      ':now': S(iso(now)),
      ...(refund ? { ':attempts': N(attempts) } : {}),
      ...error.values,
    },
    end: {
      state: 'retrying',
      writer,
      ...(cost
        ? { cost: costAfter(job, withSummary(ended(job, changes), leased, errors), cost, errors, expiresAt) }
        : {}),
    },
  };
}

/**
 * `failed`, the attempt's error counted; the job enters the state index. With `hold`, `held`
 * instead (a replay that diverged from its journal): the same write, so the same write units.
 */
export function failUpdate({ job, now, errors, expiresAt, writer, cost, hold }: FailInput): FencedUpdate {
  const state = hold ? 'held' : 'failed';
  const changes: Partial<Job> = {
    state,
    updatedAt: iso(now),
    finishedAt: iso(now),
    expiresAt,
    lastWriter: writer,
  };
  const leased = { ...job, ...changes };
  const error = errorUpdate(errors, leased);
  return {
    operation: hold ? 'hold' : 'fail',
    set: `finishedAt = :now, updatedAt = :now, expiresAt = :ttl${error.set}`,
    remove: 'leaseOwner, leaseExpiresAt',
    values: { ':now': S(iso(now)), ':ttl': N(expiresAt), ...error.values },
    end: {
      state,
      writer,
      ...(cost
        ? { cost: costAfter(job, withSummary(ended(job, changes), leased, errors), cost, errors, expiresAt) }
        : {}),
    },
  };
}

/** `expired`: a job that never started (`scheduled`/`queued`, no attempt) past its `dispatchBy`. */
export function expireWrite(tableName: string, { job, now, expiresAt }: ExpireInput): UpdateItemCommandInput {
  return {
    TableName: tableName,
    Key: keyOf(keys.job(job.id)),
    UpdateExpression: 'SET #state = :expired, finishedAt = :now, updatedAt = :now, expiresAt = :ttl, gsi2pk = :gsi2pk',
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
  };
}

/**
 * `skipped` with its reason: a job that never started (`scheduled`/`queued`, no attempt in its
 * series) under the same token; with `beforeSeq`, only one of a lower debounce seq (or none).
 */
export function skipWrite(
  tableName: string,
  { job, now, expiresAt, reason, beforeSeq }: SkipInput,
): UpdateItemCommandInput {
  const ordered = beforeSeq === undefined ? '' : ' AND (attribute_not_exists(debounceSeq) OR debounceSeq < :before)';
  return {
    TableName: tableName,
    Key: keyOf(keys.job(job.id)),
    UpdateExpression:
      'SET #state = :skipped, skipReason = :why, finishedAt = :now, updatedAt = :now, expiresAt = :ttl REMOVE waitingFor',
    ConditionExpression: `#state IN (:scheduled, :queued) AND attempts = :zero AND leaseToken = :token${ordered}`,
    ExpressionAttributeNames: { '#state': 'state' },
    ExpressionAttributeValues: {
      ...(beforeSeq === undefined ? {} : { ':before': N(beforeSeq) }),
      ':skipped': S('skipped'),
      ':why': S(JSON.stringify(reason)),
      ':scheduled': S('scheduled'),
      ':queued': S('queued'),
      ':zero': N(0),
      ':token': N(job.leaseToken),
      ':now': S(iso(now)),
      ':ttl': N(expiresAt),
    },
  };
}
