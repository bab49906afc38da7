/**
 * Metrics and job cost against local AWS (DynamoDB Local, fauxqs) through the real SDK: the
 * clients are metered as the Lambda entry points meter them, so the write units are the ones
 * DynamoDB Local reports for `ReturnConsumedCapacity`, and the job's stored cost (estimated by the
 * store for its own final write) is checked against them.
 */
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { jobViewSchema } from '../../shared/api/schemas';
import { defineJobType } from '../../shared/core/job-type';
import { METRIC } from '../../shared/core/metrics';
import { CostMeter } from '../../shared/lambda/cost-meter';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { MemoryMetrics } from '../support/fakes';

let aws: LocalAws;
const cleanup: (() => Promise<void>)[] = [];

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
});

afterEach(async () => {
  for (const stop of cleanup.splice(0).reverse()) await stop();
});

afterAll(async () => {
  await aws?.stop();
});

const attempts = new Map<string, number>();

/** `tally`: fails the first attempt of a job whose payload says so, then returns a small result. */
const tally: JobDefinition = {
  spec: defineJobType({
    type: 'tally',
    payload: z.object({ failFirst: z.boolean() }),
    timeoutMs: 5_000,
    retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 100 } },
  }),
  run: async (payload, ctx) => {
    attempts.set(ctx.jobId, ctx.attempt);
    if ((payload as { failFirst: boolean }).failFirst && ctx.attempt === 1) throw new Error('first attempt fails');
    return { attempt: ctx.attempt };
  },
};

async function start(): Promise<{ platform: LocalPlatform; metrics: MemoryMetrics }> {
  const metrics = new MemoryMetrics();
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('obs'),
    jobs: [tally],
    logger: createLogger({ level: 'error' }),
    metrics,
    meter: new CostMeter(),
    runner: { maxConcurrency: 1, waitTimeSeconds: 1 },
  });
  cleanup.push(() => platform.stop());
  return { platform, metrics };
}

async function enqueue(platform: LocalPlatform, payload: unknown): Promise<string> {
  const response = await fetch(`${platform.url}/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'tally', payload }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

/** GET /jobs/{id} until it succeeded, parsed with the OpenAPI document's schema. */
async function succeeded(platform: LocalPlatform, id: string) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const response = await fetch(`${platform.url}/jobs/${id}`);
    const view = jobViewSchema.parse(await response.json());
    if (view.state === 'succeeded') return view;
    if (Date.now() > deadline) throw new Error(`job ${id} is ${view.state} after 20 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Until the metric has `count` values: the worker records the delivery's cost after its last call. */
async function values(metrics: MemoryMetrics, name: (typeof METRIC)[keyof typeof METRIC], count: number) {
  const deadline = Date.now() + 5_000;
  while (metrics.values(name, 'tally').length < count && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return metrics.values(name, 'tally');
}

describe('job metrics and cost on local AWS', () => {
  it('a job that succeeds at once: enqueued, started, succeeded; its cost is its claim and its success write', async () => {
    const { platform, metrics } = await start();
    const id = await enqueue(platform, { failFirst: false });
    const view = await succeeded(platform, id);
    expect(await values(metrics, METRIC.requests, 1)).toEqual([2]);
    // DynamoDB Local's units for the claim and the final write; the store estimated the latter
    expect(metrics.values(METRIC.writeUnits, 'tally')).toEqual([2]);
    expect(view.cost).toEqual({ requests: 2, writeUnits: 2 });
    expect(metrics.sum(METRIC.enqueued, 'tally')).toBe(1);
    expect(metrics.sum(METRIC.started, 'tally')).toBe(1);
    expect(metrics.sum(METRIC.succeeded, 'tally')).toBe(1);
    expect(metrics.values(METRIC.queueDelay, 'tally')).toHaveLength(1);
    expect(metrics.values(METRIC.runDuration, 'tally')).toHaveLength(1);
  });

  it('a job that fails once: the cost of both deliveries, write units as DynamoDB Local reported them', async () => {
    const { platform, metrics } = await start();
    const id = await enqueue(platform, { failFirst: true });
    const view = await succeeded(platform, id);
    expect(attempts.get(id)).toBe(2);
    const requests = await values(metrics, METRIC.requests, 2);
    const writeUnits = metrics.values(METRIC.writeUnits, 'tally');
    // 1st: claim, retry write, error item, ChangeMessageVisibility (the backoff: after the write
    // that recorded the cost); 2nd: claim, the error history it reads (BatchGetItem), success write
    expect(requests).toEqual([4, 3]);
    expect(view.cost).toEqual({ requests: 6, writeUnits: writeUnits.reduce((a, b) => a + b, 0) });
    expect(metrics.sum(METRIC.retried, 'tally')).toBe(1);
    expect(metrics.sum(METRIC.started, 'tally')).toBe(2);
    expect(metrics.sum(METRIC.failed, 'tally')).toBe(0);
  });
});
