/**
 * The DynamoDB job store's writes as its pure builders make them (shared/aws/job-store/): the
 * expression each write sends, its fence and its values, read without a table. What the writes
 * do to a stored job is pinned by the job-store contract on DynamoDB Local.
 */
import { describe, expect, it } from 'vitest';
import { claimWrite } from '../../shared/aws/job-store/claim-write';
import { compileCondition } from '../../shared/aws/job-store/condition';
import { expireWrite, failUpdate, retryUpdate, skipWrite, succeedUpdate } from '../../shared/aws/job-store/end-writes';
import { fencedWrite, heartbeatUpdate } from '../../shared/aws/job-store/fenced';
import { errorPut } from '../../shared/aws/job-store/item-writes';
import { markWaitingWrite, suspendUpdate, wakeWrite } from '../../shared/aws/job-store/wait-writes';
import { TAKEOVER } from '../../shared/core/claim-rule';
import type { AttemptError, WaitingFor } from '../../shared/core/job';
import { MAX_CLOCK_SKEW_MS } from '../../shared/core/lease';
import { EARLY_START_TOLERANCE_MS } from '../../shared/core/scheduling';
import { newJob } from '../support/fakes';

const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const TABLE = 'jobs';
const running = newJob(
  {
    id: 'j1',
    type: 'echo',
    state: 'running',
    attempts: 2,
    leaseToken: 7,
    leaseOwner: 'w',
    leaseExpiresAt: NOW + 5_000,
  },
  NOW - 60_000,
);
const error: AttemptError = { attempt: 2, at: iso(NOW), reason: 'error', name: 'Error', message: 'boom' };
const SLOT: WaitingFor = { kind: 'concurrency', limit: 1, key: 'k', ticket: 1, since: iso(NOW) };
const FENCE = 'leaseToken = :token AND #state = :running';

describe('claimWrite', () => {
  const write = claimWrite(TABLE, { id: 'j1', type: 'echo', owner: 'w1', now: NOW, leaseMs: 10_000, messageId: 'm1' });

  it('starts an attempt under the claim rule, compiled clause by clause', () => {
    expect(write.ConditionExpression).toBe(
      'attribute_exists(pk) AND #type = :type AND attempts < maxAttempts AND (' +
        '(#state IN (:scheduled, :queued, :retrying, :waiting) AND runAt <= :earliest AND ' +
        'attribute_not_exists(pendingParents) AND (attribute_not_exists(leaseExpiresAt) OR leaseExpiresAt < :fence)) OR ' +
        '(#state = :running AND leaseExpiresAt < :fence)) AND ' +
        '(attribute_not_exists(dispatchBy) OR attempts > :zero OR attribute_exists(resumes) OR dispatchBy >= :now)',
    );
    expect(write.UpdateExpression).toMatch(
      /^SET #state = :running, attempts = attempts \+ :one, leaseToken = leaseToken \+ :one/,
    );
    expect(write.ExpressionAttributeNames).toEqual({ '#state': 'state', '#type': 'type' });
  });

  it('binds the rule to the claim: its type, the early-start bound, the skew fence, its clock', () => {
    expect(write.ExpressionAttributeValues).toMatchObject({
      ':type': { S: 'echo' },
      ':earliest': { S: iso(NOW + EARLY_START_TOLERANCE_MS) },
      ':fence': { N: String(NOW - MAX_CLOCK_SKEW_MS) },
      ':now': { S: iso(NOW) },
      ':zero': { N: '0' },
      ':running': { S: 'running' },
      ':owner': { S: 'w1' },
      ':msg': { S: 'm1' },
      ':exp': { N: String(NOW + 10_000) },
    });
    expect(write.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
  });
});

describe('compileCondition', () => {
  it('writes a single state as an equality and only the values it uses', () => {
    expect(compileCondition(TAKEOVER, { type: 'echo', now: NOW })).toEqual({
      expression: '#state = :running AND leaseExpiresAt < :fence',
      names: { '#state': 'state' },
      values: { ':running': { S: 'running' }, ':fence': { N: String(NOW - MAX_CLOCK_SKEW_MS) } },
    });
  });
});

describe('fenced writes', () => {
  it('a heartbeat extends the lease under the fence, and ends nothing', () => {
    const write = fencedWrite(TABLE, running, heartbeatUpdate({ job: running, now: NOW, leaseMs: 3_000 }));
    expect(write.UpdateExpression).toBe('SET leaseExpiresAt = :exp');
    expect(write.ConditionExpression).toBe(FENCE);
    expect(write.ExpressionAttributeValues).toEqual({
      ':exp': { N: String(NOW + 3_000) },
      ':token': { N: '7' },
      ':running': { S: 'running' },
    });
    expect(write.ReturnValues).toBeUndefined();
  });

  it('a retry sets retrying at its runAt, records the writer, drops the lease, fenced by token and running', () => {
    const update = retryUpdate({
      job: running,
      now: NOW,
      runAt: NOW + 30_000,
      errors: [],
      expiresAt: 0,
      writer: 'w',
    });
    const write = fencedWrite(TABLE, running, update);
    expect(write.UpdateExpression).toBe(
      'SET runAt = :runAt, updatedAt = :now, #state = :to, lastWriter = :writer REMOVE leaseOwner, leaseExpiresAt',
    );
    expect(write.ConditionExpression).toBe(FENCE);
    expect(write.ExpressionAttributeValues).toMatchObject({
      ':to': { S: 'retrying' },
      ':writer': { S: 'w' },
      ':token': { N: '7' },
      ':running': { S: 'running' },
      ':runAt': { S: iso(NOW + 30_000) },
    });
    expect(write.ReturnValues).toBeUndefined();
  });

  it('a retry with an error counts it and returns the count; a refund gives the attempt back', () => {
    const update = retryUpdate({
      job: running,
      now: NOW,
      runAt: NOW,
      errors: [error],
      expiresAt: 0,
      writer: 'w',
      refund: true,
    });
    const write = fencedWrite(TABLE, running, update);
    expect(write.UpdateExpression).toContain(
      'attempts = :attempts, lastError = :lastError, errorCount = if_not_exists(errorCount, :zero) + :one',
    );
    expect(write.ExpressionAttributeValues?.[':attempts']).toEqual({ N: '1' });
    expect(write.ReturnValues).toBe('UPDATED_NEW');
  });

  it('a fail enters the state index; a cost given is written', () => {
    const update = failUpdate({
      job: running,
      now: NOW,
      errors: [error],
      expiresAt: 99,
      writer: 'w',
      cost: { requests: 1, writeUnits: 1 },
    });
    const write = fencedWrite(TABLE, running, update);
    expect(write.UpdateExpression).toMatch(/#state = :to, lastWriter = :writer, gsi2pk = :gsi2pk, cost = :cost REMOVE/);
    expect(write.ExpressionAttributeValues?.[':to']).toEqual({ S: 'failed' });
    expect(write.ExpressionAttributeValues?.[':ttl']).toEqual({ N: '99' });
    expect(write.ExpressionAttributeValues?.[':cost']?.M?.requests?.N).toBeDefined();
  });

  it('a succeed names #result only with a result, and returns the whole item', () => {
    const without = fencedWrite(
      TABLE,
      running,
      succeedUpdate({ job: running, now: NOW, result: undefined, expiresAt: 1, writer: 'w' }),
    );
    expect(without.ExpressionAttributeNames).toEqual({ '#state': 'state' });
    expect(without.ReturnValues).toBe('ALL_NEW');
    const withResult = fencedWrite(
      TABLE,
      running,
      succeedUpdate({ job: running, now: NOW, result: { ok: 1 }, expiresAt: 1, writer: 'w' }),
    );
    expect(withResult.UpdateExpression).toContain('#result = :result');
    expect(withResult.ExpressionAttributeNames).toEqual({ '#state': 'state', '#result': 'result' });
    expect(withResult.ExpressionAttributeValues?.[':result']).toEqual({ S: '{"ok":1}' });
  });

  it('a suspend for a signal records its name; a sleep removes any', () => {
    const suspendFor = (kind: 'signal' | 'sleep', key: string) =>
      suspendUpdate({
        job: running,
        now: NOW,
        runAt: NOW + 60_000,
        waitingFor: { kind, key, until: iso(NOW + 60_000), since: iso(NOW) },
        writer: 'w',
      });
    const signal = suspendFor('signal', 'go');
    expect(signal.set).toContain('waitSignal = :signal');
    expect(signal.remove).toBe('leaseOwner, leaseExpiresAt');
    expect(signal.values[':attempts']).toEqual({ N: '1' });
    expect(signal.end).toEqual({ state: 'waiting', writer: 'w' });
    const sleep = suspendFor('sleep', 'nap');
    expect(sleep.remove).toBe('leaseOwner, leaseExpiresAt, waitSignal');
  });
});

describe('writes outside a lease', () => {
  const queued = newJob({ id: 'j2', type: 'echo', leaseToken: 3 }, NOW);

  it('markWaiting: a job waiting to start, and with a clock a takeover-ready running one', () => {
    const plain = markWaitingWrite(TABLE, { job: queued, waitingFor: SLOT });
    expect(plain.ConditionExpression).toBe('#state IN (:scheduled, :queued, :retrying, :waiting)');
    const timed = markWaitingWrite(TABLE, { job: queued, waitingFor: SLOT, now: NOW });
    expect(timed.ConditionExpression).toBe(
      '#state IN (:scheduled, :queued, :retrying, :waiting) OR (#state = :running AND leaseExpiresAt < :fence)',
    );
    expect(timed.ExpressionAttributeValues?.[':fence']).toEqual({ N: String(NOW - MAX_CLOCK_SKEW_MS) });
  });

  it('wake: only a job waiting for that signal', () => {
    const write = wakeWrite(TABLE, { id: 'j2', signal: 'go', now: NOW });
    expect(write.ConditionExpression).toBe('#state = :waiting AND waitSignal = :signal');
    expect(write.UpdateExpression).toBe('SET runAt = :now REMOVE waitSignal');
  });

  it('expire and skip: a job that never started; skip under its token, after a debounce seq', () => {
    expect(expireWrite(TABLE, { job: queued, now: NOW, expiresAt: 5 }).ConditionExpression).toBe(
      '#state IN (:scheduled, :queued) AND attempts = :zero AND dispatchBy < :now',
    );
    const skip = skipWrite(TABLE, {
      job: queued,
      now: NOW,
      expiresAt: 5,
      reason: { kind: 'singleton', key: 'k', at: iso(NOW) },
      beforeSeq: 4,
    });
    expect(skip.ConditionExpression).toBe(
      '#state IN (:scheduled, :queued) AND attempts = :zero AND leaseToken = :token AND (attribute_not_exists(debounceSeq) OR debounceSeq < :before)',
    );
    expect(skip.ExpressionAttributeValues).toMatchObject({ ':token': { N: '3' }, ':before': { N: '4' } });
  });

  it('an error item is put unconditionally, and only if absent on a replay', () => {
    expect(errorPut(TABLE, running, 1, error, 9).ConditionExpression).toBeUndefined();
    expect(errorPut(TABLE, running, 1, error, 9, true).ConditionExpression).toBe('attribute_not_exists(pk)');
  });
});
