import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { type AttemptError, errorSummary, type Job, type JobProgress, type WaitingFor } from '../core/job';
import { classifyRefusedClaim, isOwnAppliedEnd, MAX_CLOCK_SKEW_MS, wokenFor } from '../core/lease';
import { addCost, type JobCost, NO_COST } from '../core/metrics';
import type { ClaimResult, EndWritten, JobStore, SkipInput, SuspendInput } from '../core/ports';
import { EARLY_START_TOLERANCE_MS } from '../core/scheduling';
import type { JobState } from '../core/states';
import { isSparseState, keys } from '../core/table';
import { LeaseLostError } from '../errors';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';

import {
  errorCountOf,
  errorItemOf,
  fromItem,
  type Item,
  itemBytes,
  PAYLOAD_RETENTION_DAYS,
  payloadKey,
  STATUS_ITEM_GROWTH_BYTES,
  statusWriteUnits,
  summaryMessageRoom,
  toItem,
  withHistory,
  writeUnits,
} from './job-item';

const iso = (ms: number) => new Date(ms).toISOString();

/** The job as an attempt-ending write leaves it: `changes` applied, the lease owner and expiry removed. */
function ended(job: Job, changes: Partial<Job>): Job {
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
    return keyOf(keys.job(id));
  }

  private withHistory(item: Item): Promise<Job> {
    return withHistory(this.client, this.tableName, item);
  }

  /**
   * The payload item: retained {@link PAYLOAD_RETENTION_DAYS} days after the job's `runAt`, past
   * the longest a job can live (its horizon, retries and retention), as nothing rewrites it.
   */
  private async putPayload(job: Job): Promise<void> {
    const ttl = Math.floor(Date.parse(job.runAt) / 1000) + PAYLOAD_RETENTION_DAYS * 86_400;
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...keyOf(payloadKey(job.id, job.createdAt, job.payloadHash)),
            payload: S(JSON.stringify(job.payload)),
            expiresAt: N(ttl),
          },
        }),
      );
    } catch (e) {
      translateAwsError(e, 'DynamoDB PutItem (payload)');
    }
  }

  /**
   * Writes the `n`-th error of a job as an item of its own (a PutItem after the fenced write
   * that counted it), retained until `expiresAt`. A replay of that write (`replay`) writes it
   * only if it is not there yet: the first try's error stands, as the status item's does.
   */
  private async putError(job: Job, n: number, error: AttemptError, expiresAt: number, replay = false): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: errorItemOf(job, n, error, expiresAt),
          ...(replay ? { ConditionExpression: 'attribute_not_exists(pk)' } : {}),
        }),
      );
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return;
      translateAwsError(e, 'DynamoDB PutItem (error history)');
    }
  }

  async create(job: Job): Promise<{ created: true } | { created: false; existing: Job }> {
    // A payload the status item cannot hold with everything it gains later (1 KB) is written
    // once, as its own item, before the job: the status item, rewritten at every state change,
    // never carries it. Its key names the payload's hash, so a replay with another payload
    // (refused by the create below) never overwrites it.
    let item = toItem(job);
    if (itemBytes(item) + STATUS_ITEM_GROWTH_BYTES > 1024) {
      item = toItem(job, true);
      await this.putPayload(job);
    }
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: item,
          // A job past its retention is gone for readers (TTL deletes it up to ~48 h later): its id is free.
          ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :retainedUntil',
          ExpressionAttributeValues: { ':retainedUntil': N(Date.parse(job.createdAt) / 1000) },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      // A job is created without errors; a history given anyway (a test's seed) gets its items.
      const ttl = job.expiresAt ?? Math.floor(Date.parse(job.createdAt) / 1000) + 400 * 86_400;
      for (const [i, entry] of job.errors.entries()) await this.putError(job, i + 1, entry, ttl);
      return { created: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException && error.Item) {
        return { created: false, existing: await this.withHistory(error.Item) };
      }
      return translateAwsError(error, 'DynamoDB PutItem (create job)');
    }
  }

  async get(id: string): Promise<Job | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: this.key(id), ConsistentRead: true }),
      );
      return out.Item ? await this.withHistory(out.Item) : undefined;
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem');
    }
  }

  async claim({
    id,
    type,
    owner,
    now,
    leaseMs,
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
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(id),
          UpdateExpression:
            'SET #state = :running, attempts = attempts + :one, leaseToken = leaseToken + :one, leaseOwner = :owner, ' +
            'leaseExpiresAt = :exp, leaseMessage = :msg, startedAt = :now, updatedAt = :now REMOVE waitingFor, waitSignal',
          ConditionExpression:
            'attribute_exists(pk) AND #type = :type AND attempts < maxAttempts AND (' +
            // a job that is due, with no earlier attempt's lease possibly still held, and no
            // parent left to wait for
            '(#state IN (:scheduled, :queued, :retrying, :waiting) AND runAt <= :earliest AND ' +
            'attribute_not_exists(pendingParents) AND ' +
            '(attribute_not_exists(leaseExpiresAt) OR leaseExpiresAt < :fence)) OR ' +
            // a takeover: the lease expired longer than the clock-skew bound ago
            '(#state = :running AND leaseExpiresAt < :fence)) AND ' +
            // not a never-started job past its dispatchBy (one that waited, `resumes`, had started)
            '(attribute_not_exists(dispatchBy) OR attempts > :zero OR attribute_exists(resumes) OR dispatchBy >= :now)',
          ExpressionAttributeNames: { '#state': 'state', '#type': 'type' },
          ExpressionAttributeValues: {
            ':type': S(type),
            ':running': S('running'),
            ':scheduled': S('scheduled'),
            ':queued': S('queued'),
            ':retrying': S('retrying'),
            ':waiting': S('waiting'),
            ':one': N(1),
            ':owner': S(owner),
            ':msg': S(messageId ?? '-'),
            ':exp': N(now + leaseMs),
            ':now': S(iso(now)),
            ':fence': N(now - MAX_CLOCK_SKEW_MS),
            ':earliest': S(iso(now + EARLY_START_TOLERANCE_MS)),
            ':zero': N(0),
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'claimed', job: await this.withHistory(out.Attributes ?? {}) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        if (!error.Item) return { kind: 'missing' };
        // Every job the store returns carries its error history (read only when it has errors:
        // a refused claim of a job that failed before is rare).
        const current = await this.withHistory(error.Item);
        // Our own claim, applied on an earlier try whose response was lost (the SDK retried
        // it): owners are unique per claim call, so this lease is ours.
        if (current.state === 'running' && current.leaseOwner === owner) return { kind: 'claimed', job: current };
        return classifyRefusedClaim(current, now, type);
      }
      return translateAwsError(error, 'DynamoDB UpdateItem (claim)');
    }
  }

  /**
   * A write fenced by the job's lease token and `running` state. An attempt-ending write names
   * its `end` (target state and writer): it moves the job to that state, rewrites the state index
   * key to match, and records the writer, so that a replay of our own applied write (response
   * lost, SDK retried) is told apart from another worker's write under the same token.
   */
  private async fenced(
    job: Job,
    operation: string,
    update: { set: string; remove?: string },
    values: Record<string, AttributeValue>,
    end?: { state: JobState; writer: string; cost?: JobCost },
    /** Return the whole item as written (`ALL_NEW`, no extra cost). @default the updated attributes, only for an error count */
    all = false,
  ): Promise<Item | undefined> {
    // An end in a sparse state (failed) enters the state index; no other end touches an index.
    const indexed = end !== undefined && isSparseState(end.state);
    const cost = end?.cost;
    const set = end
      ? `${update.set}, #state = :to, lastWriter = :writer${indexed ? ', gsi2pk = :gsi2pk' : ''}${cost ? ', cost = :cost' : ''}`
      : update.set;
    const expression = `SET ${set}${update.remove ? ` REMOVE ${update.remove}` : ''}`;
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(job.id),
          UpdateExpression: expression,
          ConditionExpression: 'leaseToken = :token AND #state = :running',
          ExpressionAttributeNames: {
            '#state': 'state',
            ...(expression.includes('#result') ? { '#result': 'result' } : {}),
          },
          ExpressionAttributeValues: {
            ...values,
            ':token': N(job.leaseToken),
            ':running': S('running'),
            ...(end
              ? {
                  ':to': S(end.state),
                  ':writer': S(end.writer),
                  ...(indexed ? { ':gsi2pk': S(keys.byTypeState(job.type, end.state, job.id)) } : {}),
                  ...(cost ? { ':cost': { M: { requests: N(cost.requests), writeUnits: N(cost.writeUnits) } } } : {}),
                }
              : {}),
          },
          // the error count a retry or fail just wrote (it names the error's own item)
          ...(all
            ? { ReturnValues: 'ALL_NEW' as const }
            : expression.includes('errorCount')
              ? { ReturnValues: 'UPDATED_NEW' as const }
              : {}),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return out.Attributes;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const current = error.Item ? fromItem(error.Item) : undefined;
        if (end && current && isOwnAppliedEnd(current, job.leaseToken, end)) return error.Item;
        throw new LeaseLostError(job.id, job.leaseToken);
      }
      return translateAwsError(error, `DynamoDB UpdateItem (${operation})`);
    }
  }

  /**
   * The update of a retry or fail that records the attempt's error: its summary on the status
   * item and one more in the count. Nothing when no error is given.
   */
  private errorUpdate(
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
  private costAfter(
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

  /** After the fenced write that counted it, the attempt's error as an item of its own. */
  private async recordError(
    job: Job,
    written: Item | undefined,
    errors: readonly AttemptError[],
    expiresAt: number,
  ): Promise<void> {
    const last = errors.at(-1);
    const n = written ? errorCountOf(written) : 0;
    // `written` is the whole item (not just what was updated) when the write was a replay
    const replay = written?.pk !== undefined;
    if (last && n > 0) await this.putError(job, n, last, expiresAt, replay);
  }

  async heartbeat({ job, now, leaseMs }: { job: Job; now: number; leaseMs: number }): Promise<void> {
    await this.fenced(job, 'heartbeat', { set: 'leaseExpiresAt = :exp' }, { ':exp': N(now + leaseMs) });
  }

  async progress({ job, progress }: { job: Job; progress: JobProgress }): Promise<void> {
    await this.fenced(job, 'progress', { set: 'progress = :progress' }, { ':progress': S(JSON.stringify(progress)) });
  }

  async succeed({
    job,
    now,
    result,
    expiresAt,
    writer,
    cost,
  }: {
    job: Job;
    now: number;
    result: unknown;
    expiresAt: number;
    writer: string;
    cost?: JobCost;
  }): Promise<EndWritten> {
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
    const written = await this.fenced(
      job,
      'succeed',
      { set, remove: 'leaseOwner, leaseExpiresAt' },
      values,
      {
        state: 'succeeded',
        writer,
        ...(cost ? { cost: this.costAfter(job, after, cost, [], expiresAt) } : {}),
      },
      true,
    );
    return { childCount: Number(written?.childCount?.N ?? 0) };
  }

  async retry({
    job,
    now,
    runAt,
    errors,
    expiresAt,
    writer,
    refund,
    cost,
  }: {
    job: Job;
    now: number;
    runAt: number;
    errors: AttemptError[];
    expiresAt: number;
    writer: string;
    refund?: boolean;
    cost?: JobCost;
  }): Promise<void> {
    const attempts = refund ? Math.max(0, job.attempts - 1) : job.attempts;
    const changes: Partial<Job> = {
      attempts,
      state: 'retrying',
      runAt: iso(runAt),
      updatedAt: iso(now),
      lastWriter: writer,
    };
    // the summary's room is measured with the lease still on the item, as the next claim puts it back
    const error = this.errorUpdate(errors, { ...job, ...changes });
    const after = ended(job, changes);
    const written = await this.fenced(
      job,
      'retry',
      {
        set: `runAt = :runAt, updatedAt = :now${refund ? ', attempts = :attempts' : ''}${error.set}`,
        remove: 'leaseOwner, leaseExpiresAt',
      },
      {
        ':runAt': S(iso(runAt)),
        ':now': S(iso(now)),
        ...(refund ? { ':attempts': N(attempts) } : {}),
        ...error.values,
      },
      {
        state: 'retrying',
        writer,
        ...(cost
          ? { cost: this.costAfter(job, withSummary(after, { ...job, ...changes }, errors), cost, errors, expiresAt) }
          : {}),
      },
    );
    await this.recordError(job, written, errors, expiresAt);
  }

  async fail({
    job,
    now,
    errors,
    expiresAt,
    writer,
    cost,
  }: {
    job: Job;
    now: number;
    errors: AttemptError[];
    expiresAt: number;
    writer: string;
    cost?: JobCost;
  }): Promise<void> {
    const changes: Partial<Job> = {
      state: 'failed',
      updatedAt: iso(now),
      finishedAt: iso(now),
      expiresAt,
      lastWriter: writer,
    };
    const error = this.errorUpdate(errors, { ...job, ...changes });
    const after = ended(job, changes);
    const written = await this.fenced(
      job,
      'fail',
      {
        set: `finishedAt = :now, updatedAt = :now, expiresAt = :ttl${error.set}`,
        remove: 'leaseOwner, leaseExpiresAt',
      },
      { ':now': S(iso(now)), ':ttl': N(expiresAt), ...error.values },
      {
        state: 'failed',
        writer,
        ...(cost
          ? { cost: this.costAfter(job, withSummary(after, { ...job, ...changes }, errors), cost, errors, expiresAt) }
          : {}),
      },
    );
    await this.recordError(job, written, errors, expiresAt);
  }

  async suspend({ job, now, runAt, waitingFor, writer, cost }: SuspendInput): Promise<void> {
    const attempts = Math.max(0, job.attempts - 1);
    const resumes = (job.resumes ?? 0) + 1;
    const signal = waitingFor.kind === 'signal' ? waitingFor.key : undefined;
    const changes: Partial<Job> = {
      attempts,
      state: 'waiting',
      runAt: iso(runAt),
      updatedAt: iso(now),
      lastWriter: writer,
      resumes,
      waitingFor,
      ...(signal === undefined ? {} : { waitSignal: signal }),
    };
    await this.fenced(
      job,
      'suspend',
      {
        set:
          'runAt = :runAt, updatedAt = :now, attempts = :attempts, resumes = :resumes, waitingFor = :w' +
          (signal === undefined ? '' : ', waitSignal = :signal'),
        remove: `leaseOwner, leaseExpiresAt${signal === undefined ? ', waitSignal' : ''}`,
      },
      {
        ':runAt': S(iso(runAt)),
        ':now': S(iso(now)),
        ':attempts': N(attempts),
        ':resumes': N(resumes),
        ':w': S(JSON.stringify(waitingFor)),
        ...(signal === undefined ? {} : { ':signal': S(signal) }),
      },
      {
        state: 'waiting',
        writer,
        ...(cost ? { cost: this.costAfter(job, ended(job, changes), cost, [], 0) } : {}),
      },
    );
  }

  async wake({ id, signal, now }: { id: string; signal: string; now: number }): Promise<Job | undefined> {
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(id),
          UpdateExpression: 'SET runAt = :now REMOVE waitSignal',
          ConditionExpression: '#state = :waiting AND waitSignal = :signal',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':now': S(iso(now)), ':waiting': S('waiting'), ':signal': S(signal) },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return fromItem(out.Attributes ?? {});
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        // woken already (a replay of this wake, its response lost; or another sender's): say so
        const current = error.Item ? fromItem(error.Item) : undefined;
        return current && wokenFor(current, signal, now) ? current : undefined;
      }
      return translateAwsError(error, 'DynamoDB UpdateItem (wake)');
    }
  }

  async markWaiting({ job, waitingFor, now }: { job: Job; waitingFor: WaitingFor; now?: number }): Promise<boolean> {
    try {
      // a running job whose lease may no longer be held (its fence, expiry + skew, is past) waits
      // for a takeover: `leaseHeld` in the condition's terms
      const takeover = now === undefined ? '' : ' OR (#state = :running AND leaseExpiresAt < :fenced)';
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(job.id),
          UpdateExpression: 'SET waitingFor = :w',
          ConditionExpression: `#state IN (:scheduled, :queued, :retrying, :waiting)${takeover}`,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':w': S(JSON.stringify(waitingFor)),
            ':scheduled': S('scheduled'),
            ':queued': S('queued'),
            ':retrying': S('retrying'),
            ':waiting': S('waiting'),
            ...(now === undefined ? {} : { ':running': S('running'), ':fenced': N(now - MAX_CLOCK_SKEW_MS) }),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateAwsError(error, 'DynamoDB UpdateItem (mark waiting)');
    }
  }

  async expire({ job, now, expiresAt }: { job: Job; now: number; expiresAt: number }): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(job.id),
          UpdateExpression:
            'SET #state = :expired, finishedAt = :now, updatedAt = :now, expiresAt = :ttl, gsi2pk = :gsi2pk',
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

  async skip({ job, now, expiresAt, reason, beforeSeq }: SkipInput): Promise<boolean> {
    try {
      const ordered =
        beforeSeq === undefined ? '' : ' AND (attribute_not_exists(debounceSeq) OR debounceSeq < :before)';
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(job.id),
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
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateAwsError(error, 'DynamoDB UpdateItem (skip)');
    }
  }
}
