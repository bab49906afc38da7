/**
 * Lifecycle guarantees of the worker runtime, proven against local AWS (DynamoDB Local, fauxqs)
 * through the real SDK: duplicate deliveries, dead workers and lease takeover, heartbeats,
 * timeouts, exhausted retries, malformed messages, cancelled jobs. Faults are injected at the
 * SDK middleware level (test/support/faults.ts) or by wrapping the job store; nothing is mocked.
 */
import {
  ChangeMessageVisibilityCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { type AwsClients, createAwsClients } from '../../shared/aws/clients';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import { ManualClock } from '../../shared/core/clock';
import type { Job } from '../../shared/core/job';
import { payloadHash } from '../../shared/core/payload-hash';
import type { JobStore } from '../../shared/core/ports';
import { isTerminal } from '../../shared/core/states';
import { createLogger, type Logger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import { type LocalAws, localClients, startLocalAws } from '../local-aws/index';
import { type QueueRunner, startQueueRunner } from '../local-aws/lambda-runner';
import { type LocalPlatform, type LocalPlatformOptions, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { toSqsEvent } from '../local-aws/sqs-event';
import { FaultInjector, interceptStore } from '../support/faults';
import { countEnds, type ProbePayload, ProbeTracker, probeJob } from '../support/probes';

let aws: LocalAws;
let inspect: ReturnType<typeof localClients>;
const cleanup: (() => Promise<void>)[] = [];

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  inspect = localClients(aws);
});

afterEach(async () => {
  for (const stop of cleanup.splice(0).reverse()) await stop();
});

afterAll(async () => {
  inspect?.destroy();
  await aws?.stop();
});

// ---------------------------------------------------------------------------------------------
// Helpers

interface LogLine {
  level: string;
  message: string;
  jobId?: string;
  messageId?: string;
  [field: string]: unknown;
}

function captureLogs(): { lines: LogLine[]; logger: Logger; find(message: string, jobId?: string): LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger({ level: 'info', sink: (line) => lines.push(JSON.parse(line) as LogLine) });
  return {
    lines,
    logger,
    find: (message, jobId) =>
      lines.filter((l) => l.message.startsWith(message) && (jobId === undefined || l.jobId === jobId)),
  };
}

interface Fixture {
  platform: LocalPlatform;
  tracker: ProbeTracker;
  logs: ReturnType<typeof captureLogs>;
  def: JobDefinition;
  queueUrl: string;
  queueArn: string;
  dlqUrl: string;
}

/** A platform with one probe job type `probe`, stopped after the test. */
async function setUp(
  options: {
    timeoutMs?: number;
    maxAttempts?: number;
    leaseMs?: number;
    visibilitySeconds?: number;
    faults?: FaultInjector;
    clock?: ManualClock;
  } & Partial<Pick<LocalPlatformOptions, 'runWorkers' | 'wrapStore' | 'maxReceiveCount' | 'worker' | 'runner'>> = {},
): Promise<Fixture> {
  const tracker = new ProbeTracker();
  const logs = captureLogs();
  const def = probeJob({
    type: 'probe',
    tracker,
    timeoutMs: options.timeoutMs ?? 10_000,
    maxAttempts: options.maxAttempts ?? 3,
    backoff: { kind: 'constant', delayMs: 100 },
  });
  let clients: AwsClients | undefined;
  if (options.faults) {
    aws.applyEnv();
    clients = createAwsClients();
    options.faults.install(clients.dynamo, 'dynamodb');
    options.faults.install(clients.sqs, 'sqs');
  }
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('lifecycle'),
    jobs: [def],
    logger: logs.logger,
    ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.visibilitySeconds ? { visibilityTimeoutSeconds: options.visibilitySeconds } : {}),
    ...(clients ? { clients } : {}),
    ...(options.runWorkers !== undefined ? { runWorkers: options.runWorkers } : {}),
    ...(options.wrapStore ? { wrapStore: options.wrapStore } : {}),
    ...(options.maxReceiveCount ? { maxReceiveCount: options.maxReceiveCount } : {}),
    ...(options.worker ? { worker: options.worker } : {}),
    runner: { maxConcurrency: 2, waitTimeSeconds: 1, ...options.runner },
  });
  cleanup.push(() => platform.stop());
  const queues = platform.deployment.queues.probe;
  if (!queues) throw new Error('no probe queues');
  return { platform, tracker, logs, def, queueUrl: queues.url, queueArn: queues.arn, dlqUrl: queues.dlqUrl };
}

/** Another "Lambda container" for the same job type: its own worker (owner) on the platform's store and clients. */
function extraWorker(f: Fixture, owner: string, leaseMs?: number) {
  return createWorker(f.def, {
    config: f.platform.config,
    store: f.platform.store,
    queue: new SqsJobQueue(f.platform.clients.sqs),
    logger: f.logs.logger,
    owner,
    ...(leaseMs ? { leaseMs } : {}),
  });
}

/** An extra queue runner (event source mapping poller) for `handler`, stopped after the test. */
function extraRunner(
  f: Fixture,
  handler: ReturnType<typeof extraWorker>,
  options: { batchSize?: number; maxConcurrency?: number } = {},
): QueueRunner {
  const runner = startQueueRunner({
    queueUrl: f.queueUrl,
    queueArn: f.queueArn,
    handler,
    functionName: `probe-${Math.random().toString(36).slice(2, 8)}`,
    batchSize: options.batchSize ?? 1,
    maxConcurrency: options.maxConcurrency ?? 1,
    waitTimeSeconds: 1,
    sqs: inspect.sqs,
  });
  cleanup.push(() => runner.stop());
  return runner;
}

async function enqueue(
  f: Fixture,
  payload: ProbePayload,
  extra: { id?: string; maxAttempts?: number } = {},
): Promise<string> {
  const response = await fetch(`${f.platform.url}/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'probe', payload, ...extra }),
  });
  const body = (await response.json()) as { id: string };
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body.id;
}

async function waitForJob(store: JobStore, id: string, states: string[], timeoutMs = 20_000): Promise<Job> {
  const deadline = Date.now() + timeoutMs;
  let last: Job | undefined;
  while (Date.now() < deadline) {
    last = await store.get(id);
    if (last && states.includes(last.state)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job ${id} did not reach ${states.join('|')} in ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

async function waitUntil(predicate: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function queueCounts(queueUrl: string): Promise<{ visible: number; inFlight: number; delayed: number }> {
  const out = await inspect.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  const a = out.Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

const empty = { visible: 0, inFlight: 0, delayed: 0 };

async function sendCopy(f: Fixture, id: string, delaySeconds = 0): Promise<void> {
  await inspect.sqs.send(
    new SendMessageCommand({
      QueueUrl: f.queueUrl,
      MessageBody: JSON.stringify({ v: 1, id, type: 'probe' }),
      ...(delaySeconds ? { DelaySeconds: delaySeconds } : {}),
    }),
  );
}

/** Receives up to `max` messages (waiting up to 5 s for the first) as a Lambda SQS event. */
async function receiveEvent(f: Fixture, max = 1): Promise<SQSEvent> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const out = await inspect.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: f.queueUrl,
        MaxNumberOfMessages: max,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    if (out.Messages?.length) return toSqsEvent(out.Messages, f.queueArn);
  }
  throw new Error('no message received');
}

function never(): Promise<never> {
  return new Promise<never>(() => {});
}

// ---------------------------------------------------------------------------------------------

describe('duplicate deliveries', () => {
  it('runs the handler once when two copies of a message reach two runners at once; the duplicate is deleted', async () => {
    const f = await setUp({ runWorkers: false, leaseMs: 3_000 });
    const id = await enqueue(f, { holdOnAttempts: [1] });
    await sendCopy(f, id);
    const runnerA = extraRunner(f, extraWorker(f, 'worker-a', 3_000));
    const runnerB = extraRunner(f, extraWorker(f, 'worker-b', 3_000));

    // Attempt 1 holds until released: the second copy arrives while it runs.
    await f.tracker.waitFor(() => f.tracker.count(id) === 1, 10_000, 'the first execution');
    await waitUntil(
      () => f.logs.find('duplicate delivery of a job running under a live lease', id).length === 1,
      10_000,
      'the duplicate',
    );
    await waitUntil(async () => (await queueCounts(f.queueUrl)).inFlight === 1, 5_000, 'the duplicate to be deleted');
    f.tracker.release(id);

    const job = await waitForJob(f.platform.store, id, ['succeeded', 'failed']);
    expect(job).toMatchObject({ state: 'succeeded', attempts: 1, result: { attempt: 1 } });
    expect(countEnds(f.tracker.trace(id))).toMatchObject({ started: 1, completed: 1 });
    await waitUntil(async () => (await queueCounts(f.queueUrl)).inFlight === 0, 5_000, 'the queue to drain');
    expect(await queueCounts(f.queueUrl)).toEqual(empty);
    expect(await queueCounts(f.dlqUrl)).toEqual(empty);
    expect(runnerA.stats.failures + runnerB.stats.failures).toBe(0); // nothing left to bounce toward the DLQ
  });

  it('runs the handler once when the same record reaches two worker invocations concurrently', async () => {
    const f = await setUp({ runWorkers: false });
    const id = await enqueue(f, { sleepMs: 300 });
    const event = await receiveEvent(f);
    const [a, b] = await Promise.all([extraWorker(f, 'worker-a')(event), extraWorker(f, 'worker-b')(event)]);

    // One invocation runs it; the other finds the attempt's own message under a live lease and
    // keeps it hidden until the lease could be taken over (it is never deleted while it may be
    // the job's only message).
    const messageId = event.Records[0]?.messageId;
    expect([...a.batchItemFailures, ...b.batchItemFailures]).toEqual([{ itemIdentifier: messageId }]);
    expect(countEnds(f.tracker.trace(id))).toMatchObject({ started: 1, completed: 1 });
    expect(f.logs.find('job may not start yet; its message returns when it may', id)).toHaveLength(1);
    expect(await f.platform.store.get(id)).toMatchObject({ state: 'succeeded', attempts: 1 });
  });
});

describe('dead workers and leases', () => {
  it('lets another worker take over after the lease of a dead worker expires, and rejects the dead worker’s late success', async () => {
    const leaseMs = 1_500;
    // worker-a "dies" like a frozen process: its clock stops, its heartbeats never reach
    // DynamoDB (so the message's visibility is not extended either) and its handler hangs until
    // the test releases it. (A live worker whose heartbeats fail stops itself before its lease
    // runs out; only a frozen one can wake up and attempt a late write.)
    const f = await setUp({
      runWorkers: false,
      leaseMs,
      visibilitySeconds: 3,
      worker: { owner: 'worker-a', clock: new ManualClock(Date.now()) },
      wrapStore: (store) =>
        interceptStore(store, {
          heartbeat: (original, input) => (input.job.leaseOwner?.startsWith('worker-a:') ? never() : original(input)),
        }),
    });
    const id = await enqueue(f, { holdOnAttempts: [1] });
    const first = f.platform.workers.probe?.(await receiveEvent(f));
    if (!first) throw new Error('no worker');
    await f.tracker.waitFor(() => f.tracker.count(id) === 1, 5_000, 'attempt 1');
    const claimedAt = Date.now();

    extraRunner(f, extraWorker(f, 'worker-b', leaseMs));
    const done = await waitForJob(f.platform.store, id, ['succeeded', 'failed'], 15_000);
    expect(done).toMatchObject({ state: 'succeeded', attempts: 2, result: { attempt: 2 } });
    const second = f.tracker.trace(id).executions[1];
    expect(second?.attempt).toBe(2);
    expect((second?.startedAt ?? 0) - claimedAt).toBeGreaterThanOrEqual(leaseMs - 100);

    // The dead worker wakes up and reports success: fenced out.
    f.tracker.release(id);
    expect((await first).batchItemFailures).toEqual([]);
    const late = f.logs.find('late write rejected', id);
    expect(late).toHaveLength(1);
    expect(late[0]).toMatchObject({ level: 'warn', errorName: 'LeaseLostError' });
    const final = await f.platform.store.get(id);
    expect(final).toMatchObject({ state: 'succeeded', attempts: 2, result: { attempt: 2 }, leaseToken: 2 });
    expect(final?.finishedAt).toBe(done.finishedAt);
    await waitUntil(async () => (await queueCounts(f.queueUrl)).inFlight === 0, 5_000, 'the queue to drain');
  });

  it('keeps a job that runs longer than its lease alive with heartbeats, without a second execution', async () => {
    let heartbeats = 0;
    const f = await setUp({
      leaseMs: 1_500,
      visibilitySeconds: 3,
      runner: { maxConcurrency: 4 },
      wrapStore: (store) =>
        interceptStore(store, {
          heartbeat: async (original, input) => {
            await original(input);
            heartbeats += 1;
          },
        }),
    });
    extraRunner(f, extraWorker(f, 'worker-b', 1_500)); // a second poller that would pick up a lapsed message
    const id = await enqueue(f, { sleepMs: 5_000 });
    const job = await waitForJob(f.platform.store, id, ['succeeded', 'failed'], 15_000);

    expect(job).toMatchObject({ state: 'succeeded', attempts: 1, result: { attempt: 1 } });
    expect(countEnds(f.tracker.trace(id))).toMatchObject({ started: 1, completed: 1 });
    expect(heartbeats).toBeGreaterThanOrEqual(3);
    expect(f.logs.find('duplicate delivery', id)).toEqual([]);
    expect(f.logs.find('lease lost', id)).toEqual([]);
    await waitUntil(async () => (await queueCounts(f.queueUrl)).inFlight === 0, 5_000, 'the queue to drain');
  });
});

describe('timeouts, retries and final failure', () => {
  it('records a timeout, retries, and succeeds on the next attempt (handler honours its signal)', async () => {
    const f = await setUp({ timeoutMs: 1_000 });
    const id = await enqueue(f, { overrunOnAttempts: [1] });
    const job = await waitForJob(f.platform.store, id, ['succeeded', 'failed'], 15_000);

    expect(job).toMatchObject({ state: 'succeeded', attempts: 2, result: { attempt: 2 } });
    expect(job.errors).toHaveLength(1);
    expect(job.errors[0]).toMatchObject({ attempt: 1, reason: 'timeout', name: 'JobTimeoutError' });
    const [first, second] = f.tracker.trace(id).executions;
    expect(first).toMatchObject({ attempt: 1, end: 'aborted', abortReason: 'JobTimeoutError' });
    expect((first?.endedAt ?? 0) - (first?.startedAt ?? 0)).toBeLessThan(2_000);
    expect(second).toMatchObject({ attempt: 2, end: 'completed' });
  });

  it('records a timeout even when the handler ignores its signal, and its late return changes nothing', async () => {
    const f = await setUp({ timeoutMs: 1_000 });
    const id = await enqueue(f, { overrunOnAttempts: [1], ignoreSignal: true });
    const job = await waitForJob(f.platform.store, id, ['succeeded', 'failed'], 15_000);
    expect(job).toMatchObject({ state: 'succeeded', attempts: 2, result: { attempt: 2 } });
    expect(job.errors[0]).toMatchObject({ attempt: 1, reason: 'timeout', name: 'JobTimeoutError' });

    // The ignoring handler returns about 2 s after it started; the job is not touched.
    await f.tracker.waitFor(() => f.tracker.count(id, 'completed') === 2, 5_000, 'the late return');
    expect(await f.platform.store.get(id)).toMatchObject({ state: 'succeeded', attempts: 2, result: { attempt: 2 } });
  });

  it('fails an always-failing job after exactly maxAttempts attempts and calls onFailure once with the history', async () => {
    const f = await setUp({ maxAttempts: 3 });
    const id = await enqueue(f, { alwaysFail: true });
    const job = await waitForJob(f.platform.store, id, ['failed', 'succeeded'], 15_000);

    expect(job).toMatchObject({ state: 'failed', attempts: 3, maxAttempts: 3 });
    expect(job.errors.map((e) => [e.attempt, e.reason])).toEqual([
      [1, 'error'],
      [2, 'error'],
      [3, 'error'],
    ]);
    await f.tracker.waitFor(() => f.tracker.trace(id).onFailure.length > 0, 5_000, 'onFailure');
    await new Promise((r) => setTimeout(r, 1_500)); // anything still to come would show by now
    const trace = f.tracker.trace(id);
    expect(countEnds(trace)).toMatchObject({ started: 3, failed: 3 });
    expect(trace.onFailure).toHaveLength(1);
    expect(trace.onFailure[0]).toMatchObject({ jobId: id, type: 'probe', attempts: 3 });
    expect(trace.onFailure[0]?.errors.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(f.logs.find('job failed', id)).toHaveLength(1);
    expect(await queueCounts(f.queueUrl)).toEqual(empty);
    expect(await queueCounts(f.dlqUrl)).toEqual(empty);
  });
});

describe('messages that must not run', () => {
  it('moves malformed messages to the DLQ after maxReceiveCount receives, logging their message ids', async () => {
    const f = await setUp({ maxReceiveCount: 3, visibilitySeconds: 1 });
    const bodies = [
      'this is not JSON',
      JSON.stringify({ v: 1, id: 'no-type' }),
      JSON.stringify({ v: 2, id: 'x', type: 'probe' }),
    ];
    const sent: string[] = [];
    for (const body of bodies) {
      const out = await inspect.sqs.send(new SendMessageCommand({ QueueUrl: f.queueUrl, MessageBody: body }));
      sent.push(out.MessageId ?? '');
    }
    await waitUntil(async () => (await queueCounts(f.dlqUrl)).visible === bodies.length, 20_000, 'the DLQ to fill');
    expect(await queueCounts(f.queueUrl)).toEqual(empty);

    const dlq = await inspect.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: f.dlqUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'] }),
    );
    expect((dlq.Messages ?? []).map((m) => m.Body).sort()).toEqual([...bodies].sort());
    for (const m of dlq.Messages ?? []) {
      expect(Number(m.Attributes?.ApproximateReceiveCount)).toBeGreaterThanOrEqual(3);
    }
    for (const messageId of sent) {
      const lines = f.logs
        .find('malformed or misrouted message; leaving it for the DLQ')
        .filter((l) => l.messageId === messageId);
      expect(lines.map((l) => l.receiveCount)).toEqual([1, 2, 3]);
      expect(lines[0]).toMatchObject({ level: 'error', reason: 'not a job message' });
    }
    // each counted as dead-lettered once: when it was given back on its last (3rd) receive
    const deadLettered = f.logs.find('the message had its last receive: SQS moves it to the dead-letter queue');
    expect(deadLettered.map((l) => l.messageId).sort()).toEqual([...sent].sort());
    expect(deadLettered.map((l) => l.receiveCount)).toEqual([3, 3, 3]);
    expect(f.tracker.jobs.size).toBe(0);
  });

  it('discards the message of a cancelled job without running it', async () => {
    const f = await setUp();
    const now = new Date().toISOString();
    const id = `cancelled-${Date.now()}`;
    const payload = { tag: 'never' };
    const job: Job = {
      id,
      type: 'probe',
      state: 'cancelled',
      payload,
      payloadHash: payloadHash('probe', payload),
      attempts: 0,
      maxAttempts: 3,
      createdAt: now,
      updatedAt: now,
      runAt: now,
      finishedAt: now,
      leaseToken: 0,
      errors: [],
    };
    expect(await f.platform.store.create(job)).toEqual({ created: true });
    await sendCopy(f, id);

    await waitUntil(() => f.logs.find('duplicate delivery of a finished job', id).length === 1, 10_000, 'the discard');
    expect(f.logs.find('duplicate delivery of a finished job', id)[0]).toMatchObject({ state: 'cancelled' });
    await waitUntil(async () => (await queueCounts(f.queueUrl)).inFlight === 0, 5_000, 'the message to be deleted');
    expect(await queueCounts(f.queueUrl)).toEqual(empty);
    expect(await queueCounts(f.dlqUrl)).toEqual(empty);
    expect(f.tracker.count(id)).toBe(0);
    expect(await f.platform.store.get(id)).toMatchObject({ state: 'cancelled', attempts: 0, leaseToken: 0 });
  });
});

/**
 * Faults real AWS produces and the SDK itself retries — a write applied but its response lost
 * (a timeout, a reset connection), heartbeats failing for longer than the lease — and SQS
 * handing out a message again while its job runs. Each of these currently breaks a guarantee
 * of docs/architecture.md on the normal path: these tests fail until the runtime is fixed
 * (fixes proposed in the chaos report). The supervisor may repair some of them minutes later;
 * none of these tests runs it, except the one that shows what its repair does.
 */
describe('guarantees under lost responses and failing dependencies', () => {
  /** The job's log lines, for assertion messages. */
  const story = (f: Fixture, id: string) =>
    f.logs.lines
      .filter((l) => l.jobId === id)
      .map((l) => `${l.level} ${l.message}${l.errorName ? ` (${String(l.errorName)})` : ''}`)
      .join('\n');

  async function settle(f: Fixture, id: string, timeoutMs: number): Promise<Job | undefined> {
    const deadline = Date.now() + timeoutMs;
    let job = await f.platform.store.get(id);
    while (Date.now() < deadline && !(job && isTerminal(job.state))) {
      await new Promise((r) => setTimeout(r, 100));
      job = await f.platform.store.get(id);
    }
    return job;
  }

  it('runs a job whose claim was applied but whose response was lost (the SDK retried the claim)', async () => {
    const faults = new FaultInjector();
    const f = await setUp({ faults, leaseMs: 1_500, visibilitySeconds: 3 });
    faults.script({ match: (c) => c.op === 'UpdateItem:claim', kind: 'timeout', phase: 'after' });
    const id = await enqueue(f, {});
    const job = await settle(f, id, 8_000);
    // Today: the SDK's retry of the claim is refused by the claim's own lease, the worker takes
    // its own claim for a duplicate ("busy"), deletes the only message, and the job stays
    // `running` with nobody running it.
    expect(job?.state, story(f, id)).toBe('succeeded');
    expect(f.tracker.count(id, 'completed')).toBe(1);
  });

  it('runs a single-attempt job whose claim response was lost, instead of failing it unrun after the supervisor’s repair', async () => {
    const clock = new ManualClock(Date.now());
    const faults = new FaultInjector();
    const f = await setUp({ faults, clock, maxAttempts: 1, leaseMs: 1_500 });
    faults.script({ match: (c) => c.op === 'UpdateItem:claim', kind: 'server', phase: 'after' });
    const id = await enqueue(f, {});
    await waitUntil(
      () => f.logs.find('attempt started', id).length > 0 || f.logs.find('duplicate delivery', id).length > 0,
      10_000,
      'the claim',
    );
    await waitUntil(async () => (await queueCounts(f.queueUrl)).inFlight === 0, 5_000, 'the message to be settled');
    // The supervisor's pass, once the attempt's time (lease, timeout and grace) is over.
    clock.advance(10 * 60_000);
    await f.platform.supervise();
    const job = await settle(f, id, 8_000);
    expect(f.tracker.count(id), story(f, id)).toBe(1); // today: 0, the handler never ran
    expect(job?.state, story(f, id)).toBe('succeeded'); // today: failed, lease_expired
  });

  it('retries a job whose retry write was applied but whose response was lost', async () => {
    const faults = new FaultInjector();
    const f = await setUp({ faults, leaseMs: 1_500, visibilitySeconds: 3 });
    faults.script({ match: (c) => c.op === 'UpdateItem:retry', kind: 'server', phase: 'after' });
    const id = await enqueue(f, { failTimes: 1 });
    const job = await settle(f, id, 8_000);
    // Today: the SDK's retry of the write is refused (the job is `retrying` already), the worker
    // reads that as a lost lease ("late write rejected"), deletes the message, and the job stays
    // `retrying` until the supervisor's grace (10 minutes) runs out.
    expect(job?.state, story(f, id)).toBe('succeeded');
    expect(job?.attempts).toBe(2);
  });

  it('calls onFailure once for a job whose final failure write was applied but whose response was lost', async () => {
    const faults = new FaultInjector();
    const f = await setUp({ faults, maxAttempts: 2 });
    faults.script({ match: (c) => c.op === 'UpdateItem:fail', kind: 'throttle', phase: 'after' });
    const id = await enqueue(f, { alwaysFail: true });
    const job = await waitForJob(f.platform.store, id, ['failed', 'succeeded'], 15_000);
    expect(job).toMatchObject({ state: 'failed', attempts: 2 });
    await new Promise((r) => setTimeout(r, 1_000));
    // Today: the replayed write is refused, read as a lost lease, and onFailure is skipped.
    expect(f.tracker.trace(id).onFailure, story(f, id)).toHaveLength(1);
  });

  it('stops a handler whose heartbeats keep failing before its lease can be taken over', async () => {
    const faults = new FaultInjector();
    const f = await setUp({ faults, leaseMs: 1_500, visibilitySeconds: 3, runWorkers: false });
    // Every heartbeat of the first attempt (token 1) fails on all SDK attempts (DynamoDB 500s).
    faults.script({
      match: (c) =>
        c.op === 'UpdateItem:heartbeat' &&
        (c.input.ExpressionAttributeValues as Record<string, { N?: string }> | undefined)?.[':token']?.N === '1',
      kind: 'server',
      phase: 'before',
      times: Number.POSITIVE_INFINITY,
    });
    extraRunner(f, extraWorker(f, 'worker-a', 1_500));
    extraRunner(f, extraWorker(f, 'worker-b', 1_500));
    const id = await enqueue(f, { sleepMs: 6_000 });
    const job = await waitForJob(f.platform.store, id, ['succeeded', 'failed'], 20_000);
    expect(job.state).toBe('succeeded');
    // Today: attempt 1 keeps running past its lease (its heartbeats only log "heartbeat failed");
    // when the message comes back another worker takes the job over and attempt 2 runs
    // alongside it.
    expect(f.tracker.overlaps, story(f, id)).toEqual([]);
  });

  it('keeps a job retryable when the same SQS message is delivered again while its attempt runs', async () => {
    const f = await setUp({ runWorkers: false, leaseMs: 3_000 });
    const id = await enqueue(f, { holdOnAttempts: [1], failTimes: 1 });
    const event = await receiveEvent(f);
    const receiptHandle = event.Records[0]?.receiptHandle ?? '';
    const first = extraWorker(f, 'worker-a', 3_000)(event);
    await f.tracker.waitFor(() => f.tracker.count(id) === 1, 5_000, 'attempt 1');
    extraRunner(f, extraWorker(f, 'worker-b', 3_000));

    // SQS hands the same message out again while attempt 1 runs (at-least-once delivery, or a
    // visibility extension that did not land): here, its visibility lapses.
    await inspect.sqs.send(
      new ChangeMessageVisibilityCommand({ QueueUrl: f.queueUrl, ReceiptHandle: receiptHandle, VisibilityTimeout: 0 }),
    );
    await waitUntil(
      () => f.logs.find('job may not start yet; its message returns when it may', id).length === 1,
      10_000,
      'the redelivery, kept hidden while the lease is live',
    );
    f.tracker.release(id); // attempt 1 fails: the job must be retried
    await first;

    const job = await settle(f, id, 8_000);
    // Today: the redelivery is taken for a duplicate and deleted — but it was the job's only
    // message; attempt 1's retry cannot set its visibility ("could not set retry delay") and
    // the job stays `retrying` until the supervisor's grace (10 minutes) runs out.
    expect(job?.state, story(f, id)).toBe('succeeded');
    expect(job?.attempts).toBe(2);
  });
});
