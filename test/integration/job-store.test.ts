import {
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { keyOf } from '../../shared/aws/attributes';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { errorKey, itemBytes, payloadKey, STATUS_ITEM_GROWTH_BYTES, toItem } from '../../shared/aws/job-item';
import {
  type AttemptError,
  appendError,
  ERROR_MESSAGE_LIMIT,
  ERROR_STACK_LIMIT,
  errorSummary,
  type Job,
} from '../../shared/core/job';
import { MAX_CLOCK_SKEW_MS } from '../../shared/core/lease';
import { payloadHash } from '../../shared/core/payload-hash';
import { keys } from '../../shared/core/table';
import { LeaseLostError } from '../../shared/errors';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { useJobTable } from '../local-aws/job-table';
import { newJob as baseJob } from '../support/fakes';

const { dynamo, tableName } = useJobTable('store');
const store = new DynamoJobStore(dynamo, tableName);
const T0 = Date.parse('2026-06-01T00:00:00Z');
const LEASE = 10_000;
/** A lease can be taken over once it expired more than the clock-skew bound ago. */
const TAKEOVER = LEASE + MAX_CLOCK_SKEW_MS;
let seq = 0;

function newJob(overrides: Partial<Job> = {}): Job {
  seq += 1;
  const payload = { n: seq };
  return baseJob(
    { id: `job-${seq}`, type: 'echo', payload, payloadHash: payloadHash('echo', payload), ...overrides },
    T0,
  );
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A client on the same table whose PutItem of an error item answers success without writing (a lost write). */
function withoutErrorItems(): DynamoDBClient {
  const client = new DynamoDBClient({
    endpoint: inject('dynamodbEndpoint'),
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
  });
  type Next = (args: { input: Record<string, unknown> }) => Promise<unknown>;
  (
    client.middlewareStack as unknown as {
      add(m: (next: Next, context: { commandName?: string }) => Next, o: object): void;
    }
  ).add(
    (next, context) => async (args) => {
      const item = args.input.Item as Record<string, unknown> | undefined;
      if (context.commandName === 'PutItemCommand' && item?.error !== undefined) return { output: { $metadata: {} } };
      return next(args);
    },
    { step: 'initialize', name: 'dropErrorItems' },
  );
  return client;
}

async function claimed(job: Job, owner: string, now: number): Promise<Job> {
  const result = await store.claim({ id: job.id, type: job.type, owner, now, leaseMs: LEASE });
  if (result.kind !== 'claimed') throw new Error(`expected a claim, got ${result.kind}`);
  return result.job;
}

describe('DynamoJobStore against DynamoDB Local', () => {
  it('creates a job once; a second create returns the stored job from the failed condition', async () => {
    const job = newJob();
    expect(await store.create(job)).toEqual({ created: true });
    const again = await store.create({ ...job, payload: { other: true } });
    expect(again.created).toBe(false);
    if (!again.created) expect(again.existing.payload).toEqual(job.payload);
    expect((await store.get(job.id))?.state).toBe('queued');
  });

  it('lets exactly one of many concurrent claims win', async () => {
    const job = newJob();
    await store.create(job);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        store.claim({ id: job.id, type: 'echo', owner: `w${i}`, now: T0, leaseMs: LEASE }),
      ),
    );
    expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'busy')).toHaveLength(11);
    const stored = await store.get(job.id);
    expect(stored?.attempts).toBe(1);
    expect(stored?.leaseToken).toBe(1);
  });

  it('fences a stale worker: after a takeover its late success is rejected and the new attempt wins', async () => {
    const job = newJob();
    await store.create(job);
    const first = await claimed(job, 'worker-a', T0);
    expect(first.leaseToken).toBe(1);
    // worker-a stops heartbeating; its lease expires and worker-b takes over
    const busy = await store.claim({
      id: job.id,
      type: 'echo',
      owner: 'worker-b',
      now: T0 + TAKEOVER,
      leaseMs: LEASE,
    });
    expect(busy.kind).toBe('busy');
    const second = await claimed(job, 'worker-b', T0 + TAKEOVER + 1);
    expect(second.leaseToken).toBe(2);
    expect(second.attempts).toBe(2);
    await expect(
      store.succeed({ job: first, now: T0 + TAKEOVER + 2, result: { from: 'a' }, expiresAt: 1, writer: 'worker-a' }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.heartbeat({ job: first, now: T0 + TAKEOVER + 2, leaseMs: LEASE })).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    await store.succeed({
      job: second,
      now: T0 + TAKEOVER + 3,
      result: { from: 'b' },
      expiresAt: 2,
      writer: 'worker-b',
    });
    const stored = await store.get(job.id);
    expect(stored?.state).toBe('succeeded');
    expect(stored?.result).toEqual({ from: 'b' });
    expect(stored?.leaseOwner).toBeUndefined();
  });

  it('reports a finished job as finished and never reclaims it', async () => {
    const job = newJob();
    await store.create(job);
    const mine = await claimed(job, 'w', T0);
    await store.succeed({ job: mine, now: T0 + 1, result: null, expiresAt: 3, writer: 'w' });
    const again = await store.claim({ id: job.id, type: 'echo', owner: 'w2', now: T0 + 10 * LEASE, leaseMs: LEASE });
    expect(again.kind).toBe('finished');
  });

  it('reports an expired last attempt as exhausted instead of running it again', async () => {
    const job = newJob({ maxAttempts: 1 });
    await store.create(job);
    await claimed(job, 'w', T0);
    const again = await store.claim({ id: job.id, type: 'echo', owner: 'w2', now: T0 + TAKEOVER + 1, leaseMs: LEASE });
    expect(again.kind).toBe('exhausted');
    if (again.kind === 'exhausted') {
      await store.fail({ job: again.job, now: T0 + TAKEOVER + 2, errors: [], expiresAt: 4, writer: 'w2' });
      expect((await store.get(job.id))?.state).toBe('failed');
    }
  });

  it('refuses a claim for the wrong type and for a missing job', async () => {
    const job = newJob();
    await store.create(job);
    expect((await store.claim({ id: job.id, type: 'sleep', owner: 'w', now: T0, leaseMs: LEASE })).kind).toBe(
      'missing',
    );
    expect((await store.claim({ id: 'no-such-job', type: 'echo', owner: 'w', now: T0, leaseMs: LEASE })).kind).toBe(
      'missing',
    );
    expect((await store.get(job.id))?.attempts).toBe(0);
  });

  it('moves a retrying job back to running on the next claim, keeping its error history', async () => {
    const job = newJob();
    await store.create(job);
    const first = await claimed(job, 'w', T0);
    const errors = [{ attempt: 1, at: new Date(T0).toISOString(), reason: 'error', name: 'Error', message: 'boom' }];
    await store.retry({ job: first, now: T0 + 1, runAt: T0 + 5000, errors, expiresAt: 2e9, writer: 'w' });
    const retrying = await store.get(job.id);
    expect(retrying?.state).toBe('retrying');
    expect(retrying?.lastError?.message).toBe('boom');
    const second = await claimed(job, 'w', T0 + 5000);
    expect(second.attempts).toBe(2);
    expect(second.errors).toEqual(errors);
  });

  it('puts only failed, cancelled and expired jobs in the sparse state index, and touches no index after the create', async () => {
    const query = (state: string, id: string) =>
      dynamo.send(
        new QueryCommand({
          TableName: tableName,
          IndexName: 'byTypeState',
          KeyConditionExpression: 'gsi2pk = :pk',
          ExpressionAttributeValues: { ':pk': { S: keys.byTypeState('echo', state, id) } },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
    const ok = newJob();
    await store.create(ok);
    await store.succeed({ job: await claimed(ok, 'w', T0), now: T0 + 1, result: 1, expiresAt: 5, writer: 'w' });
    for (const state of ['queued', 'running', 'succeeded'])
      expect((await query(state, ok.id)).Items?.map((i) => i.id?.S) ?? []).not.toContain(ok.id);
    const bad = newJob({ maxAttempts: 1 });
    await store.create(bad);
    await store.fail({ job: await claimed(bad, 'w', T0), now: T0 + 1, errors: [], expiresAt: 5, writer: 'w' });
    expect((await query('failed', bad.id)).Items?.map((i) => i.id?.S)).toContain(bad.id);
  });
});

describe('DynamoJobStore: the error history lives in items of its own', () => {
  const rawStatus = async (id: string) =>
    (await dynamo.send(new GetItemCommand({ TableName: tableName, Key: keyOf(keys.job(id)) }))).Item ?? {};
  const bigError = (attempt: number) => ({
    attempt,
    at: new Date(T0 + attempt).toISOString(),
    reason: 'error',
    name: 'Error',
    message: `m${attempt} ${'x'.repeat(ERROR_MESSAGE_LIMIT)}`.slice(0, ERROR_MESSAGE_LIMIT),
    stack: `Error: m${attempt}\n${'    at frame (file.js:1:1)\n'.repeat(60)}`.slice(0, ERROR_STACK_LIMIT),
  });

  it('keeps the status item under 1 KB after 5 failed attempts with long messages and stacks; get returns them all', async () => {
    const job = newJob({ maxAttempts: 6 });
    await store.create(job);
    let errors: AttemptError[] = [];
    let now = T0;
    for (let attempt = 1; attempt <= 5; attempt++) {
      const mine = await claimed(job, `w${attempt}`, now);
      expect(mine.errors).toEqual(errors); // the claim gives the history back
      errors = appendError(mine.errors, bigError(attempt));
      await store.retry({ job: mine, now, runAt: now, errors, expiresAt: 2e9, writer: `w${attempt}` });
      expect(itemBytes(await rawStatus(job.id))).toBeLessThan(1024);
      now += 1;
    }
    const last = await claimed(job, 'w6', now);
    await store.fail({ job: last, now, errors: appendError(last.errors, bigError(6)), expiresAt: 2e9, writer: 'w6' });
    const status = await rawStatus(job.id);
    expect(itemBytes(status)).toBeLessThan(1024);
    expect(status.errors).toBeUndefined();
    const stored = await store.get(job.id);
    expect(stored?.errors).toEqual([1, 2, 3, 4, 5, 6].map(bigError));
    expect(stored?.lastError).toEqual(bigError(6));
  });

  it('keeps every write of the status item to one unit with the longest type and id allowed: the summary takes the room left', async () => {
    const type = 't'.repeat(40); // JOB_TYPE_PATTERN's longest
    const id = 'i'.repeat(64); // JOB_ID_PATTERN's longest
    const payload = { n: 1 };
    const job = newJob({ id, type, payload, payloadHash: payloadHash(type, payload), maxAttempts: 7 });
    await store.create(job);
    let errors: AttemptError[] = [];
    for (let attempt = 1; attempt <= 6; attempt++) {
      const now = T0 + attempt * 100_000;
      const writer = `worker-${'w'.repeat(36)}:${attempt}`;
      const out = await store.claim({ id, type, owner: writer, now, leaseMs: LEASE, messageId: 'm'.repeat(36) });
      if (out.kind !== 'claimed') throw new Error(`expected a claim, got ${out.kind}`);
      errors = appendError(out.job.errors, bigError(attempt));
      if (attempt < 6) await store.retry({ job: out.job, now, runAt: now + 1, errors, expiresAt: 2e9, writer });
      else await store.fail({ job: out.job, now, errors, expiresAt: 2e9, writer });
      expect(itemBytes(await rawStatus(id))).toBeLessThanOrEqual(1024);
    }
    // the whole errors are in their own items
    expect((await store.get(id))?.errors).toEqual([1, 2, 3, 4, 5, 6].map(bigError));
  });

  /** A job whose first attempt was retried and whose second failed, each with its error item. */
  const failedTwice = async (): Promise<Job> => {
    const job = newJob({ maxAttempts: 2 });
    await store.create(job);
    const first = await claimed(job, 'w1', T0);
    await store.retry({ job: first, now: T0, runAt: T0, errors: [bigError(1)], expiresAt: 2e9, writer: 'w1' });
    const second = await claimed(job, 'w2', T0 + 1);
    await store.fail({ job: second, now: T0 + 1, errors: [bigError(1), bigError(2)], expiresAt: 2e9, writer: 'w2' });
    return job;
  };

  it('a missing last error item (not written yet, or lost) leaves its summary as the last entry: a failed job shows every attempt', async () => {
    // The fenced write counts the error before its item is written, so a reader in between (or
    // after a lost item write) finds the count ahead of the items.
    const job = await failedTwice();
    await dynamo.send(new DeleteItemCommand({ TableName: tableName, Key: keyOf(errorKey(job.id, job.createdAt, 2)) }));
    const stored = await store.get(job.id);
    expect(stored).toMatchObject({ state: 'failed', attempts: 2 });
    expect(stored?.errors).toEqual([bigError(1), errorSummary(bigError(2))]);
    expect(stored?.lastError).toEqual(errorSummary(bigError(2)));
    expect(stored?.lastError?.stack).toBeUndefined();
  });

  it('a lost error item before the last loses that entry only: the history skips it', async () => {
    const job = await failedTwice();
    await dynamo.send(new DeleteItemCommand({ TableName: tableName, Key: keyOf(errorKey(job.id, job.createdAt, 1)) }));
    const stored = await store.get(job.id);
    expect(stored?.errors).toEqual([bigError(2)]);
    expect(stored?.lastError).toEqual(bigError(2));
  });

  it('a replayed fail (its response lost) writes the error item only if it is missing', async () => {
    const job = newJob();
    await store.create(job);
    const mine = await claimed(job, 'w', T0);
    await store.fail({ job: mine, now: T0, errors: [bigError(1)], expiresAt: 2e9, writer: 'w' });
    await store.fail({ job: mine, now: T0, errors: [bigError(7)], expiresAt: 2e9, writer: 'w' });
    expect((await store.get(job.id))?.errors).toEqual([bigError(1)]);
  });

  it('a reused id whose error item write was lost shows its own error summary, never the old job’s error', async () => {
    // the first job of the id fails once, and is past its retention a day later
    const job = newJob({ maxAttempts: 1 });
    await store.create(job);
    const old = await claimed(job, 'w1', T0);
    await store.fail({ job: old, now: T0, errors: [bigError(1)], expiresAt: Math.floor(T0 / 1000) + 60, writer: 'w1' });
    expect((await store.get(job.id))?.errors).toEqual([bigError(1)]);
    // a new job takes the id; its failure's error item is never written (the worker died)
    const later = T0 + 86_400_000;
    const reborn = newJob({ id: job.id, maxAttempts: 1, payload: job.payload, payloadHash: job.payloadHash });
    expect(await store.create({ ...reborn, createdAt: iso(later), updatedAt: iso(later), runAt: iso(later) })).toEqual({
      created: true,
    });
    const lossy = new DynamoJobStore(withoutErrorItems(), tableName);
    const mine = await claimed(reborn, 'w2', later);
    await lossy.fail({ job: mine, now: later, errors: [bigError(2)], expiresAt: 2e9, writer: 'w2' });
    const stored = await store.get(job.id);
    expect(stored?.errors).toEqual([errorSummary(bigError(2))]);
    expect(stored?.lastError).toEqual(errorSummary(bigError(2)));
  });

  it('reads the history of an item written before error items existed', async () => {
    const job = newJob({ state: 'failed', errors: [bigError(1)] });
    const item = toItem(job);
    delete item.lastError;
    delete item.errorCount;
    item.errors = { S: JSON.stringify(job.errors) };
    await dynamo.send(new PutItemCommand({ TableName: tableName, Item: item }));
    const stored = await store.get(job.id);
    expect(stored?.errors).toEqual([bigError(1)]);
    expect(stored?.lastError).toEqual(bigError(1));
  });
});

describe('DynamoJobStore: a payload too large for the status item has its own item', () => {
  const rawStatus = async (id: string) =>
    (await dynamo.send(new GetItemCommand({ TableName: tableName, Key: keyOf(keys.job(id)) }))).Item ?? {};

  it('writes a 10 KB payload once, keeps the status item under 1 KB, and gives the payload back from claim and get', async () => {
    const payload = { blob: 'p'.repeat(10 * 1024) };
    const job = newJob({ payload, payloadHash: payloadHash('echo', payload) });
    expect(await store.create(job)).toEqual({ created: true });
    const status = await rawStatus(job.id);
    expect(status.payload).toBeUndefined();
    expect(status.payloadKey?.S).toBe(payloadKey(job.id, job.createdAt, job.payloadHash));
    expect(itemBytes(status)).toBeLessThan(1024 - STATUS_ITEM_GROWTH_BYTES);
    const mine = await claimed(job, 'w', T0);
    expect(mine.payload).toEqual(payload);
    expect(itemBytes(await rawStatus(job.id))).toBeLessThan(1024);
    await store.succeed({ job: mine, now: T0 + 1, result: { ok: true }, expiresAt: 2e9, writer: 'w' });
    expect((await store.get(job.id))?.payload).toEqual(payload);
  });

  it('a replay with another payload neither replaces the job nor its payload item', async () => {
    const payload = { blob: 'a'.repeat(4096) };
    const job = newJob({ payload, payloadHash: payloadHash('echo', payload) });
    await store.create(job);
    const other = { blob: 'b'.repeat(4096) };
    const again = await store.create({ ...job, payload: other, payloadHash: payloadHash('echo', other) });
    expect(again).toMatchObject({ created: false, existing: { payload, payloadHash: job.payloadHash } });
    expect((await store.get(job.id))?.payload).toEqual(payload);
  });

  it('keeps a small payload inline', async () => {
    const job = newJob();
    await store.create(job);
    const status = await rawStatus(job.id);
    expect(status.payload?.S).toBe(JSON.stringify(job.payload));
    expect(status.payloadKey).toBeUndefined();
  });
});
