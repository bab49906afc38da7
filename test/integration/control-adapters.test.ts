import { DeleteItemCommand, GetItemCommand, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyOf } from '../../shared/aws/attributes';
import { DynamoJobControl } from '../../shared/aws/dynamo-job-control';
import { DynamoJobIndex } from '../../shared/aws/dynamo-job-index';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { CANCELLED_KEY, toItem } from '../../shared/aws/job-item';
import { SqsDeadLetterQueues } from '../../shared/aws/sqs-dead-letters';
import { CANCELLABLE_STATES, RERUNNABLE_STATES, RETRYABLE_STATES } from '../../shared/core/control';
import type { Job } from '../../shared/core/job';
import { payloadHash } from '../../shared/core/payload-hash';
import { keys } from '../../shared/core/table';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { useJobTable } from '../local-aws/job-table';
import { type LocalSqs, startLocalSqs } from '../local-aws/sqs';
import { newJob as baseJob } from '../support/fakes';

const { dynamo, tableName, prefix } = useJobTable('control');
const store = new DynamoJobStore(dynamo, tableName);
const index = new DynamoJobIndex(dynamo, tableName);
const control = new DynamoJobControl(dynamo, tableName);
const T0 = Date.parse('2026-06-01T00:00:00.000Z');
let seq = 0;

function newJob(overrides: Partial<Job> = {}): Job {
  seq += 1;
  const payload = { n: seq };
  const id = `job-${String(seq).padStart(3, '0')}`;
  return baseJob({ id, type: 'echo', payload, payloadHash: payloadHash('echo', payload), ...overrides }, T0 + seq);
}

/** Every entry of a partition through the adapter, page by page. */
async function readPartition(partition: { index: 'byType' | 'byTypeState'; key: string }, limit: number) {
  const all: string[] = [];
  let below: string | undefined;
  for (;;) {
    const page = await index.query({ partition, limit, ...(below ? { below } : {}) });
    all.push(...page.entries.map((e) => e.summary.id));
    if (!page.more) return all;
    below = page.entries.at(-1)?.sortKey;
  }
}

describe('DynamoJobIndex against DynamoDB Local', () => {
  const jobs: Job[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 40; i++) {
      const job = newJob({ state: i % 4 === 0 ? 'failed' : 'queued' });
      jobs.push(job);
      await store.create(job);
    }
  });
  const shardOf = (job: Job) => Number(keys.byType(job.type, job.id).split('#')[1]);

  it('reads one byType partition newest first, with the projected summary, page by page', async () => {
    const shard = shardOf(jobs[0] as Job);
    const want = jobs
      .filter((j) => shardOf(j) === shard)
      .map((j) => j.id)
      .reverse();
    expect(want.length).toBeGreaterThan(1);
    expect(await readPartition({ index: 'byType', key: keys.byTypeShard('echo', shard) }, 2)).toEqual(want);
    const page = await index.query({ partition: { index: 'byType', key: keys.byTypeShard('echo', shard) }, limit: 1 });
    const first = jobs.find((j) => j.id === want[0]) as Job;
    expect(page.entries[0]).toEqual({
      sortKey: keys.created(first.createdAt, first.id),
      summary: {
        id: first.id,
        type: 'echo',
        state: first.state,
        createdAt: first.createdAt,
        runAt: first.runAt,
        attempts: 0,
        finishedAt: null,
      },
    });
    expect(page.more).toBe(true);
  });

  it('honours below (exclusive), atLeast (inclusive) and both together', async () => {
    const shard = shardOf(jobs[1] as Job);
    const partition = { index: 'byType' as const, key: keys.byTypeShard('echo', shard) };
    const inShard = jobs.filter((j) => shardOf(j) === shard);
    expect(inShard.length).toBeGreaterThanOrEqual(3);
    const [a, b, c] = inShard as [Job, Job, Job];
    const key = (j: Job) => keys.created(j.createdAt, j.id);
    const ids = async (q: { below?: string; atLeast?: string }) =>
      (await index.query({ partition, limit: 100, ...q })).entries.map((e) => e.summary.id);
    expect(await ids({ below: key(b) })).toEqual([a.id]);
    expect(await ids({ atLeast: b.createdAt })).toEqual(
      inShard
        .filter((j) => j.createdAt >= b.createdAt)
        .map((j) => j.id)
        .reverse(),
    );
    expect(await ids({ below: key(c), atLeast: a.createdAt })).toEqual([b.id, a.id]);
    const both = await index.query({ partition, limit: 1, below: key(c), atLeast: a.createdAt });
    expect(both.entries.map((e) => e.summary.id)).toEqual([b.id]);
    expect(both.more).toBe(true);
  });

  it('byType holds only what never changes: listing by type reads the current summary from the job, and skips a job that is gone', async () => {
    const job = newJob({ id: 'listed-live' });
    await store.create(job);
    const claim = await store.claim({ id: job.id, type: 'echo', owner: 'w', now: T0 + 1, leaseMs: 1000 });
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await store.succeed({ job: claim.job, now: T0 + 2, result: 1, expiresAt: 2e9, writer: 'w' });
    const partition = { index: 'byType' as const, key: keys.byType('echo', job.id) };
    const raw = await dynamo.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: 'byType',
        KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk = :sk',
        ExpressionAttributeValues: { ':pk': { S: partition.key }, ':sk': { S: keys.created(job.createdAt, job.id) } },
      }),
    );
    expect(Object.keys(raw.Items?.[0] ?? {}).sort()).toEqual([
      'createdAt',
      'gsi1pk',
      'gsi1sk',
      'id',
      'pk',
      'sk',
      'type',
    ]);
    const listed = async () =>
      (await index.query({ partition, limit: 100 })).entries.find((e) => e.summary.id === job.id)?.summary;
    expect(await listed()).toMatchObject({
      state: 'succeeded',
      attempts: 1,
      finishedAt: new Date(T0 + 2).toISOString(),
    });
    await dynamo.send(new DeleteItemCommand({ TableName: tableName, Key: keyOf(keys.job(job.id)) }));
    // gone: not listed, whether its index entry is gone yet or the item lookup leaves it out
    expect(await listed()).toBeUndefined();
  });

  it('reads byTypeState partitions of one state', async () => {
    const failed = jobs.filter((j) => j.state === 'failed');
    const found: string[] = [];
    for (let shard = 0; shard < 8; shard++) {
      found.push(
        ...(await readPartition({ index: 'byTypeState', key: keys.byTypeStateShard('echo', 'failed', shard) }, 3)),
      );
    }
    expect(found.sort()).toEqual(failed.map((j) => j.id).sort());
  });
});

describe('DynamoJobIndex: full pages with both bounds', () => {
  it('reads 100 entries between two bounds (it asks DynamoDB for 101) and completes them in batches of at most 100', async () => {
    // 102 jobs of one type in one shard: a page of 100 between two bounds fetches 101 entries
    const wanted = keys.byType('wide', 'w-0');
    const ids: string[] = [];
    for (let n = 0; ids.length < 102; n++) if (keys.byType('wide', `w-${n}`) === wanted) ids.push(`w-${n}`);
    for (const [i, id] of ids.entries()) {
      const at = new Date(T0 + i * 1000).toISOString();
      await store.create({ ...baseJob({ id, type: 'wide' }), createdAt: at, updatedAt: at, runAt: at });
    }
    const created = (i: number) => `${new Date(T0 + i * 1000).toISOString()}#${ids[i]}`;
    // a boundary key from another shard's job: nothing of this partition is dropped for it
    const page = await index.query({
      partition: { index: 'byType', key: wanted },
      below: `${new Date(T0 + 101_000).toISOString()}#zzz`,
      atLeast: created(0),
      limit: 100,
    });
    expect(page.entries.map((e) => e.summary.id)).toEqual(ids.slice(2, 102).reverse());
    expect(page.more).toBe(true);
    expect(page.entries.every((e) => e.summary.state === 'queued')).toBe(true);
  });
});

describe('DynamoJobControl: a full history trimmed while other operators act', () => {
  const full = Array.from({ length: 20 }, (_, i) => ({
    action: 'retry' as const,
    by: `op-${i}`,
    at: new Date(T0 + i).toISOString(),
  }));

  /** A control whose first trimming write waits for `between` to run (other operators acting on the job). */
  function racing(between: () => Promise<void>): DynamoJobControl {
    let done = false;
    const client = new Proxy(dynamo, {
      get(target, name, receiver) {
        if (name !== 'send') return Reflect.get(target, name, receiver);
        return async (command: { input?: { ExpressionAttributeValues?: Record<string, unknown> } }) => {
          if (!done && command.input?.ExpressionAttributeValues?.[':controls'] !== undefined) {
            done = true;
            await between();
          }
          return target.send(command as never);
        };
      },
    });
    return new DynamoJobControl(client, tableName);
  }

  it('keeps the actions of operators who acted between its first try and its trim, and lands after them', async () => {
    const job = newJob({ state: 'queued', controls: full });
    await store.create(job);
    const alice = racing(async () => {
      // Bob cancels and Carol retries: the job is queued again, its full history holds both
      const bob = await control.cancel({
        id: job.id,
        from: CANCELLABLE_STATES,
        now: T0 + 100,
        expiresAt: 2e9,
        by: 'bob',
      });
      expect(bob.kind).toBe('applied');
      const carol = await control.restart({ id: job.id, from: RETRYABLE_STATES, now: T0 + 200, by: 'carol' });
      expect(carol.kind).toBe('applied');
    });
    const result = await alice.cancel({
      id: job.id,
      from: CANCELLABLE_STATES,
      now: T0 + 300,
      expiresAt: 2e9,
      by: 'alice',
    });
    expect(result.kind).toBe('applied');
    const stored = await store.get(job.id);
    expect(stored?.state).toBe('cancelled');
    expect(stored?.controls).toHaveLength(20);
    expect(stored?.controls?.slice(-3).map((c) => `${c.action}:${c.by}`)).toEqual([
      'cancel:bob',
      'retry:carol',
      'cancel:alice',
    ]);
  });

  it('does not trim for a write its state refuses: refused, and what others did stays', async () => {
    const job = newJob({ state: 'failed', finishedAt: new Date(T0).toISOString(), controls: full });
    await store.create(job);
    const alice = racing(async () => {
      const bob = await control.restart({ id: job.id, from: RETRYABLE_STATES, now: T0 + 100, by: 'bob' });
      expect(bob.kind).toBe('applied');
    });
    // a failed job cannot be cancelled: refused, whatever the history holds
    const result = await alice.cancel({
      id: job.id,
      from: CANCELLABLE_STATES,
      now: T0 + 300,
      expiresAt: 2e9,
      by: 'alice',
    });
    expect(result.kind).toBe('refused');
    expect((await store.get(job.id))?.controls?.at(-1)).toEqual(full.at(-1));
  });
});

describe('DynamoJobControl against DynamoDB Local', () => {
  it('cancels a job in an allowed state, moving its state index entry, and keeps the fencing token', async () => {
    const job = newJob({ id: 'to-cancel', leaseToken: 4 });
    await store.create(job);
    const result = await control.cancel({
      id: job.id,
      type: 'echo',
      from: CANCELLABLE_STATES,
      now: T0 + 5000,
      expiresAt: 2_000_000_000,
    });
    expect(result.kind).toBe('applied');
    const stored = await store.get(job.id);
    expect(stored).toMatchObject({ state: 'cancelled', leaseToken: 4, expiresAt: 2_000_000_000 });
    expect(stored?.finishedAt).toBe(new Date(T0 + 5000).toISOString());
    const raw = await dynamo.send(new GetItemCommand({ TableName: tableName, Key: keyOf(keys.job(job.id)) }));
    expect(raw.Item?.gsi2pk?.S).toBe(keys.byTypeState('echo', 'cancelled', job.id));
  });

  it('refuses a finished job and returns it as it is; reports a missing one', async () => {
    const job = newJob({ id: 'finished', state: 'succeeded' });
    await store.create(job);
    const refused = await control.cancel({ id: job.id, type: 'echo', from: CANCELLABLE_STATES, now: T0, expiresAt: 1 });
    expect(refused.kind === 'refused' && refused.job.state).toBe('succeeded');
    expect(
      (await control.cancel({ id: 'nope', type: 'echo', from: CANCELLABLE_STATES, now: T0, expiresAt: 1 })).kind,
    ).toBe('missing');
    // The type is part of the condition (the state index key depends on it).
    expect((await control.restart({ id: job.id, type: 'other', from: ['succeeded'], now: T0 })).kind).toBe('refused');
  });

  it('makes a running attempt lose its lease: its fenced writes are refused after a cancel', async () => {
    const job = newJob({ id: 'running' });
    await store.create(job);
    const claim = await store.claim({ id: job.id, type: 'echo', owner: 'w1', now: T0, leaseMs: 60_000 });
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await control.cancel({ id: job.id, type: 'echo', from: CANCELLABLE_STATES, now: T0 + 1, expiresAt: 1 });
    await expect(store.heartbeat({ job: claim.job, now: T0 + 2, leaseMs: 60_000 })).rejects.toThrow(/lease/);
    await expect(store.succeed({ job: claim.job, now: T0 + 3, result: 1, expiresAt: 1, writer: 'w1' })).rejects.toThrow(
      /lease/,
    );
    expect((await store.get(job.id))?.state).toBe('cancelled');
  });

  it('restarts a failed job as a new series, and undoes that while nothing has started', async () => {
    const job = newJob({
      id: 'failed-one',
      state: 'failed',
      attempts: 3,
      leaseToken: 3,
      finishedAt: new Date(T0).toISOString(),
      expiresAt: 1_900_000_000,
    });
    job.errors = [{ attempt: 3, at: job.createdAt, reason: 'error', name: 'Error', message: 'boom' }];
    await store.create(job);
    const restarted = await control.restart({ id: job.id, type: 'echo', from: RETRYABLE_STATES, now: T0 + 10_000 });
    if (restarted.kind !== 'applied') throw new Error(restarted.kind);
    expect(restarted.job).toMatchObject({ state: 'queued', attempts: 0, retries: 1, leaseToken: 3 });
    expect(restarted.job.expiresAt).toBeUndefined();
    expect(restarted.job.finishedAt).toBeUndefined();
    expect(restarted.job.errors).toHaveLength(1);
    // A claim works again (attempts < maxAttempts) and grows the token past every earlier one.
    expect(await control.undoRestart({ previous: job, retries: 1 })).toBe(true);
    const back = await store.get(job.id);
    expect(back).toMatchObject({ state: 'failed', attempts: 3, retries: 0, expiresAt: 1_900_000_000 });
    const again = await control.restart({ id: job.id, type: 'echo', from: RETRYABLE_STATES, now: T0 + 20_000 });
    expect(again.kind === 'applied' && again.job.retries).toBe(1);
    const claim = await store.claim({ id: job.id, type: 'echo', owner: 'w', now: T0 + 20_001, leaseMs: 1000 });
    expect(claim.kind === 'claimed' && claim.job.leaseToken).toBe(4);
    expect(await control.undoRestart({ previous: job, retries: 1 })).toBe(false); // it started: no undo
  });

  it('a rerun restarts with its journal series, reruns + 1 and the corrected payload, inline or in its own item', async () => {
    const small = newJob({
      id: 'rerun-small',
      state: 'succeeded',
      attempts: 1,
      result: { ok: 1 },
      expiresAt: 1_900_000_000,
    });
    await store.create(small);
    const corrected = { n: 1, fixed: true };
    const hash = payloadHash('echo', corrected);
    const out = await control.restart({
      id: small.id,
      type: 'echo',
      from: RERUNNABLE_STATES,
      now: T0 + 10_000,
      rerun: { seen: small, journal: 'r1.a', payload: { value: corrected, hash } },
    });
    if (out.kind !== 'applied') throw new Error(out.kind);
    expect(out.job).toMatchObject({ state: 'queued', reruns: 1, retries: 1, journal: 'r1.a', payload: corrected });
    const stored = await store.get(small.id);
    expect(stored).toMatchObject({
      state: 'queued',
      reruns: 1,
      journal: 'r1.a',
      payload: corrected,
      payloadHash: hash,
    });
    expect(stored?.result).toBeUndefined();
    expect(stored?.controls).toBeUndefined();

    // a payload too large for the status item goes to an item of its own, as at create
    const big = { n: 2, text: 'x'.repeat(2_000) };
    const bigHash = payloadHash('echo', big);
    const failed = newJob({ id: 'rerun-big', state: 'failed', attempts: 1, expiresAt: 1_900_000_000 });
    await store.create(failed);
    const moved = await control.restart({
      id: failed.id,
      type: 'echo',
      from: RERUNNABLE_STATES,
      now: T0 + 10_000,
      by: 'arn:aws:iam::123456789012:user/ops',
      rerun: { seen: failed, journal: 'r1.b', payload: { value: big, hash: bigHash } },
    });
    expect(moved.kind).toBe('applied');
    const raw = await dynamo.send(new GetItemCommand({ TableName: tableName, Key: keyOf(keys.job(failed.id)) }));
    expect(raw.Item?.payload).toBeUndefined();
    expect(raw.Item?.payloadKey?.S).toContain(bigHash.slice(0, 8));
    expect(await store.get(failed.id)).toMatchObject({
      payload: big,
      journal: 'r1.b',
      controls: [{ action: 'rerun' }],
    });
  });

  it('refuses a rerun whose read is out of date: another series, another incarnation, a job that runs', async () => {
    const job = newJob({ id: 'rerun-race', state: 'failed', attempts: 1, expiresAt: 1_900_000_000 });
    await store.create(job);
    const first = await control.restart({
      id: job.id,
      type: 'echo',
      from: RERUNNABLE_STATES,
      now: T0 + 10_000,
      rerun: { seen: job, journal: 'r1.first' },
    });
    expect(first.kind).toBe('applied');
    // the second read the job before the first rerun: the write refuses it, whatever the state
    const second = await control.restart({
      id: job.id,
      type: 'echo',
      from: [...RERUNNABLE_STATES, 'queued'],
      now: T0 + 10_001,
      rerun: { seen: job, journal: 'r1.second' },
    });
    expect(second.kind).toBe('refused');
    const other = await control.restart({
      id: job.id,
      type: 'echo',
      from: [...RERUNNABLE_STATES, 'queued'],
      now: T0 + 10_002,
      rerun: { seen: { ...job, journal: 'r1.first', createdAt: new Date(T0).toISOString() }, journal: 'r2.x' },
    });
    expect(other.kind).toBe('refused');
    // and a queued job (the first rerun's) is not rerunnable
    const queued = (await store.get(job.id)) as Job;
    const live = await control.restart({
      id: job.id,
      type: 'echo',
      from: RERUNNABLE_STATES,
      now: T0 + 10_003,
      rerun: { seen: queued, journal: 'r2.y' },
    });
    expect(live.kind).toBe('refused');
    expect(await store.get(job.id)).toMatchObject({ state: 'queued', journal: 'r1.first', reruns: 1 });
  });

  it('refuses a rerun that lost to another rerun or a retry written in the same millisecond; its own replay stands', async () => {
    const job = newJob({ id: 'rerun-same-ms', state: 'failed', attempts: 1, expiresAt: 1_900_000_000 });
    await store.create(job);
    const now = T0 + 20_000;
    const input = { id: job.id, type: 'echo', from: RERUNNABLE_STATES, now };
    const first = await control.restart({ ...input, rerun: { seen: job, journal: 'r1.first' } });
    expect(first.kind).toBe('applied');
    // a lost answer's replay (the same write again) is still this rerun's success
    expect((await control.restart({ ...input, rerun: { seen: job, journal: 'r1.first' } })).kind).toBe('applied');
    // a second rerun that read the job before the first, in the same millisecond: not its job
    const second = await control.restart({ ...input, rerun: { seen: job, journal: 'r1.second' } });
    expect(second.kind).toBe('refused');
    expect(await store.get(job.id)).toMatchObject({ state: 'queued', journal: 'r1.first', reruns: 1 });

    const other = newJob({ id: 'rerun-after-retry', state: 'failed', attempts: 1, expiresAt: 1_900_000_000 });
    await store.create(other);
    const retry = await control.restart({ id: other.id, type: 'echo', from: RERUNNABLE_STATES, now });
    expect(retry.kind).toBe('applied');
    const rerun = await control.restart({
      id: other.id,
      type: 'echo',
      from: RERUNNABLE_STATES,
      now,
      rerun: { seen: other, journal: 'r1.late' },
    });
    expect(rerun.kind).toBe('refused');
    expect((await store.get(other.id))?.journal).toBeUndefined();
  });
});

describe('DynamoJobControl without the type (no read before the write)', () => {
  const gsi2pk = async (id: string) =>
    (await dynamo.send(new GetItemCommand({ TableName: tableName, Key: keyOf(keys.job(id)) }))).Item?.gsi2pk?.S;

  it('moves the state index entry from the keys the create stored', async () => {
    const job = newJob({ id: 'untyped' });
    await store.create(job);
    const cancelled = await control.cancel({ id: job.id, from: CANCELLABLE_STATES, now: T0, expiresAt: 2e9 });
    expect(cancelled.kind === 'applied' && cancelled.previous?.state).toBe('queued');
    expect(await gsi2pk(job.id)).toBe(keys.byTypeState('echo', 'cancelled', job.id));
    const restarted = await control.restart({ id: job.id, types: ['echo'], from: RETRYABLE_STATES, now: T0 + 1 });
    expect(restarted.kind === 'applied' && restarted.previous?.state).toBe('cancelled');
    // queued is not a sparse state: the restart takes the job out of byTypeState
    expect(await gsi2pk(job.id)).toBeUndefined();
    expect(await store.get(job.id)).toEqual(restarted.kind === 'applied' ? restarted.job : undefined);
  });

  it('still cancels and restarts an item written before those keys existed (old image names the type)', async () => {
    const job = newJob({ id: 'legacy' });
    const item = toItem(job);
    delete item[CANCELLED_KEY];
    await dynamo.send(new PutItemCommand({ TableName: tableName, Item: item }));
    const cancelled = await control.cancel({ id: job.id, from: CANCELLABLE_STATES, now: T0, expiresAt: 2e9 });
    expect(cancelled).toMatchObject({ kind: 'applied', job: { state: 'cancelled' } });
    expect(await gsi2pk(job.id)).toBe(keys.byTypeState('echo', 'cancelled', job.id));
    expect((await control.restart({ id: job.id, types: ['sleep'], from: RETRYABLE_STATES, now: T0 + 1 })).kind).toBe(
      'refused',
    );
    const restarted = await control.restart({ id: job.id, types: ['echo'], from: RETRYABLE_STATES, now: T0 + 1 });
    expect(restarted).toMatchObject({ kind: 'applied', job: { state: 'queued' }, previous: { state: 'cancelled' } });
    expect(await gsi2pk(job.id)).toBeUndefined();
  });
});

describe('SqsDeadLetterQueues against fauxqs', () => {
  let sqs: LocalSqs;
  let client: SQSClient;
  let dlq: SqsDeadLetterQueues;
  let dlqUrl: string;
  let dlqArn: string;
  let readyUrl: string;

  beforeAll(async () => {
    sqs = await startLocalSqs();
    client = new SQSClient({ region: 'us-east-1', endpoint: sqs.endpoint, credentials: LOCAL_CREDENTIALS });
    dlq = new SqsDeadLetterQueues(client);
    dlqUrl = (await client.send(new CreateQueueCommand({ QueueName: `${prefix}-dlq` }))).QueueUrl ?? '';
    readyUrl = (await client.send(new CreateQueueCommand({ QueueName: `${prefix}-ready` }))).QueueUrl ?? '';
    const attrs = await client.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }));
    dlqArn = attrs.Attributes?.QueueArn ?? '';
  });

  afterAll(async () => {
    client.destroy();
    await sqs.stop();
  });

  it('peeks with visibility 0: the same messages are there to see again', async () => {
    await client.send(new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: '{"v":1,"id":"j-1","type":"echo"}' }));
    await client.send(new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: 'x'.repeat(300) }));
    const first = await dlq.peek(dlqUrl, 10);
    expect(first.map((m) => m.jobId)).toEqual(['j-1', null]);
    expect(first[1]?.body).toHaveLength(256);
    expect(first[0]?.receiveCount).toBe(1);
    const second = await dlq.peek(dlqUrl, 10);
    expect(second.map((m) => m.messageId)).toEqual(first.map((m) => m.messageId));
    expect(second[0]?.receiveCount).toBe(2);
    const depth = await dlq.depth(dlqUrl); // fauxqs may count a visibility-0 message as in flight for a moment
    expect(depth.visible + depth.inFlight).toBe(2);
  });

  it('reports that fauxqs has no message move task, so the API falls back', async () => {
    expect(await dlq.startMove({ dlqArn, destinationArn: dlqArn })).toEqual({ kind: 'unsupported' });
  });

  it('receives, sends and deletes in batches', async () => {
    const letters = await dlq.receive(dlqUrl, 10, 30);
    expect(letters).toHaveLength(2);
    expect((await dlq.depth(dlqUrl)).inFlight).toBe(2);
    const sent = await dlq.sendAll(
      readyUrl,
      letters.map((l) => l.body),
    );
    expect([...sent].sort()).toEqual([0, 1]);
    expect(
      await dlq.deleteAll(
        dlqUrl,
        letters.map((l) => l.receiptHandle),
      ),
    ).toBe(2);
    expect(await dlq.depth(dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect((await dlq.depth(readyUrl)).visible).toBe(2);
  });
});
