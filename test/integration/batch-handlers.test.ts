/**
 * Batch handlers on local AWS: jobs enqueued through the API (DynamoDB Local, the SQS emulator),
 * received in one batch as the event source mapping would (BatchSize 25), and run by the batch
 * worker on the real adapters: one handler call for the batch, each job's outcome on its own job,
 * and a failed item retried alone.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import { systemClock } from '../../shared/core/clock';
import { defineJobType } from '../../shared/core/job-type';
import { METRIC } from '../../shared/core/metrics';
import { CostMeter } from '../../shared/lambda/cost-meter';
import { createLogger } from '../../shared/logger';
import { type BatchJobDefinition, createBatchWorker } from '../../shared/runtime/batch-worker';
import { createWorker } from '../../shared/runtime/worker';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { runOnce } from '../local-aws/lambda-runner';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { MemoryMetrics } from '../support/fakes';

const SIZE = 25;
const FAILING = 7;

const mailSpec = defineJobType({
  type: 'mail',
  payload: z.object({ n: z.number() }),
  timeoutMs: 10_000,
  // a 1 s backoff: the retry's message comes back after a second
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 1000 } },
  batch: { maxSize: SIZE, maxWaitSeconds: 1 },
});

/** The same jobs one per handler call, to compare what each job costs the worker. */
const singleSpec = defineJobType({
  type: 'mail-single',
  payload: z.object({ n: z.number() }),
  timeoutMs: 10_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 1000 } },
});

const meter = new CostMeter();
let aws: LocalAws;
let platform: LocalPlatform;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('batch'),
    // the deployment (table, queues, API) for the type; its worker is the batch worker below
    jobs: [
      { spec: mailSpec, run: () => Promise.reject(new Error('a batch type runs through its batch handler')) },
      { spec: singleSpec, run: async (p) => ({ sent: (p as { n: number }).n }) },
    ],
    runWorkers: false,
    meter,
  });
});

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

const post = (path: string, body: unknown) =>
  fetch(`${platform.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('batch handlers on local AWS', () => {
  it(`runs ${SIZE} jobs in one handler call; the one failed item is retried alone and the ${SIZE - 1} others are not run again`, async () => {
    const calls: { jobId: string; n: number; attempt: number }[][] = [];
    const def: BatchJobDefinition = {
      spec: mailSpec,
      runBatch: async (items) => {
        calls.push(items.map((i) => ({ jobId: i.jobId, n: (i.payload as { n: number }).n, attempt: i.attempt })));
        return items.map((i) => {
          const { n } = i.payload as { n: number };
          return n === FAILING && i.attempt === 1
            ? { ok: false, error: new Error('mailbox full') }
            : { ok: true, result: { sent: n } };
        });
      },
    };
    const metrics = new MemoryMetrics();
    const deps = {
      config: platform.config,
      store: platform.store,
      queue: new SqsJobQueue(platform.clients.sqs),
      clock: systemClock,
      logger: createLogger({ level: 'error' }),
      metrics,
      meter,
    };
    const worker = createBatchWorker(def, deps);
    const queues = platform.deployment.queues.mail;
    if (!queues) throw new Error('no mail queues');
    const mapping = {
      queueUrl: queues.url,
      queueArn: queues.arn,
      functionName: 'mail-worker',
      handler: worker,
      batchSize: SIZE,
      waitTimeSeconds: 2,
      sqs: platform.clients.sqs,
    };

    const response = await post('/jobs/batch', {
      jobs: Array.from({ length: SIZE }, (_, i) => ({ type: 'mail', id: `mail-${i + 1}`, payload: { n: i + 1 } })),
    });
    expect(response.status).toBe(200);
    const ids = Array.from({ length: SIZE }, (_, i) => `mail-${i + 1}`);

    const first = await runOnce(mapping);
    const firstWrites = metrics.values(METRIC.writeUnits, 'mail');
    const firstRequests = metrics.values(METRIC.requests, 'mail');
    expect(first.messageIds).toHaveLength(SIZE);
    expect(first.failedIds).toHaveLength(1);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.map((c) => c.jobId).sort()).toEqual([...ids].sort());

    const jobs = await Promise.all(ids.map((id) => platform.store.get(id)));
    expect(jobs.filter((j) => j?.state === 'succeeded')).toHaveLength(SIZE - 1);
    const failed = jobs.find((j) => j?.id === `mail-${FAILING}`);
    expect(failed?.state).toBe('retrying');
    expect(failed?.errors).toEqual([expect.objectContaining({ message: 'mailbox full', attempt: 1 })]);
    for (const job of jobs.filter((j) => j?.id !== `mail-${FAILING}`)) {
      expect(job?.result).toEqual({ sent: Number(job?.id.slice(5)) });
      expect(job?.attempts).toBe(1);
    }

    // The failed item's message comes back after its backoff, alone.
    const second = await runOnce({ ...mapping, waitTimeSeconds: 5 });
    expect(second.messageIds).toHaveLength(1);
    expect(second.failedIds).toEqual([]);
    expect(calls).toHaveLength(2);
    expect(calls[1]).toEqual([{ jobId: `mail-${FAILING}`, n: FAILING, attempt: 2 }]);

    const after = await Promise.all(ids.map((id) => platform.store.get(id)));
    expect(after.every((j) => j?.state === 'succeeded')).toBe(true);
    expect(after.find((j) => j?.id === `mail-${FAILING}`)?.attempts).toBe(2);
    expect(after.filter((j) => j?.attempts === 1)).toHaveLength(SIZE - 1);
    // nothing left: no item came back but the failed one
    const third = await runOnce({ ...mapping, waitTimeSeconds: 1 });
    expect(third.messageIds).toEqual([]);
    expect(calls).toHaveLength(2);

    // What a job costs the worker is what it costs one per call: batching shares the handler
    // call (and the Lambda invocation), not the job's own writes.
    const singles = Array.from({ length: 10 }, (_, i) => ({
      type: 'mail-single',
      id: `single-${i}`,
      payload: { n: i },
    }));
    expect((await post('/jobs/batch', { jobs: singles })).status).toBe(200);
    const singleQueues = platform.deployment.queues['mail-single'];
    if (!singleQueues) throw new Error('no mail-single queues');
    const single = await runOnce({
      ...mapping,
      queueUrl: singleQueues.url,
      queueArn: singleQueues.arn,
      handler: createWorker({ spec: singleSpec, run: async (p) => ({ sent: (p as { n: number }).n }) }, deps),
      batchSize: 10,
    });
    expect(single.messageIds).toHaveLength(10);
    const singleWrites = metrics.values(METRIC.writeUnits, 'mail-single');
    const perJob = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    // the 24 that succeeded at once (the failed item's delivery also wrote its retry)
    const succeededWrites = firstWrites.filter((w) => w === Math.min(...firstWrites));
    expect(succeededWrites).toHaveLength(SIZE - 1);
    expect(perJob(succeededWrites)).toBe(perJob(singleWrites));
    console.info(
      `batch of ${SIZE}: ${perJob(succeededWrites)} WU and ${perJob(firstRequests).toFixed(2)} requests per job in the worker, ` +
        `1 handler call; single jobs: ${perJob(singleWrites)} WU and ` +
        `${perJob(metrics.values(METRIC.requests, 'mail-single')).toFixed(2)} requests per job, 1 handler call each`,
    );
  });

  it('runs under the local platform: its runner takes up to batch.maxSize messages per call', async () => {
    const spec = defineJobType({
      type: 'digest',
      payload: z.object({ n: z.number() }),
      timeoutMs: 10_000,
      batch: { maxSize: 50, maxWaitSeconds: 1 },
    });
    const sizes: number[] = [];
    const local = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('batchrun'),
      jobs: [
        {
          spec,
          runBatch: async (items) => {
            sizes.push(items.length);
            return items.map((i) => ({ ok: true, result: (i.payload as { n: number }).n }));
          },
        },
      ],
      runner: { maxConcurrency: 1 },
    });
    try {
      const ids = Array.from({ length: 40 }, (_, i) => `digest-${i}`);
      const response = await fetch(`${local.url}/jobs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jobs: ids.map((id, n) => ({ type: 'digest', id, payload: { n } })) }),
      });
      expect(response.status).toBe(200);
      const deadline = Date.now() + 20_000;
      let states: (string | undefined)[] = [];
      while (Date.now() < deadline) {
        states = (await Promise.all(ids.map((id) => local.store.get(id)))).map((j) => j?.state);
        if (states.every((state) => state === 'succeeded')) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(states).toEqual(ids.map(() => 'succeeded'));
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(40);
      // the runner, like the mapping, hands over what it received at once: fewer calls than jobs
      expect(sizes.length).toBeLessThan(40);
      expect(Math.max(...sizes)).toBeGreaterThan(10);
    } finally {
      await local.stop();
    }
  });
});
