import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { allowEveryone } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { ManualClock } from '../../shared/core/clock';
import { defineJobType } from '../../shared/core/job-type';
import { METRIC } from '../../shared/core/metrics';
import { invocation, type LambdaRuntime, once, startLambdaRuntime } from '../../shared/lambda/runtime';
import { createLogger } from '../../shared/logger';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, MemoryMetrics, testConfig } from '../support/fakes';

const ENV = {
  ORRERY_TABLE: 'orrery-jobs',
  ORRERY_QUEUE_URL_BASE: 'https://sqs.eu-west-1.amazonaws.com/123456789012/',
  ORRERY_QUEUE_ARN_BASE: 'arn:aws:sqs:eu-west-1:123456789012:',
  ORRERY_QUEUE_PREFIX: 'orrery',
  ORRERY_SCHEDULE_GROUP: 'orrery',
  ORRERY_SCHEDULER_ROLE_ARN: 'arn:aws:iam::123456789012:role/orrery-scheduler',
  AWS_REGION: 'eu-west-1',
};

const context = { awsRequestId: 'req-9', functionName: 'f', memoryLimitInMB: '512' } as Context;

function fakeRuntime() {
  const flushed: number[] = [];
  const contexts: Context[] = [];
  const runtime = {
    logger: { ...createLogger({ level: 'silent' }), addContext: (c: Context) => contexts.push(c) },
    metrics: { add: () => {}, flush: () => flushed.push(Date.now()) },
  } as unknown as LambdaRuntime;
  return { runtime, flushed, contexts };
}

describe('Lambda runtime', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('an invocation takes the context for its log lines and flushes its metrics, also when it throws', async () => {
    const { runtime, flushed, contexts } = fakeRuntime();
    expect(await invocation(runtime, context, async () => 'ok')).toBe('ok');
    await expect(
      invocation(runtime, undefined, async () => {
        throw new Error('handler failed');
      }),
    ).rejects.toThrow('handler failed');
    expect(flushed).toHaveLength(2);
    expect(contexts).toEqual([context]);
  });

  it('once builds one value for concurrent first calls, and builds again after a failed build', async () => {
    let builds = 0;
    const get = once(async () => {
      builds += 1;
      if (builds === 1) throw new Error('no config');
      return builds;
    });
    await expect(get()).rejects.toThrow('no config');
    expect(await Promise.all([get(), get()])).toEqual([2, 2]);
    expect(await get()).toBe(2);
    expect(builds).toBe(2);
  });

  it('builds from the environment: metered clients on request, tracing on without Lambda leaves the clients usable', async () => {
    for (const [name, value] of Object.entries({
      ...ENV,
      ORRERY_TRACING: 'true',
      ORRERY_METRICS_NAMESPACE: 'Orrery/t',
    }))
      vi.stubEnv(name, value);
    const metered = await startLambdaRuntime({ meterCost: true });
    expect(metered.config).toMatchObject({ tracing: true, metricsNamespace: 'Orrery/t', tableName: 'orrery-jobs' });
    expect(metered.meter).toBeDefined();
    expect(typeof metered.clients.dynamo.send).toBe('function');
    const plain = await startLambdaRuntime();
    expect(plain.meter).toBeUndefined();
  });

  it('with tracing on in Lambda, the Powertools Tracer captures every client (X-Ray middleware)', async () => {
    for (const [name, value] of Object.entries({
      ...ENV,
      ORRERY_TRACING: 'true',
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
      AWS_LAMBDA_FUNCTION_NAME: 'orrery-echo',
    }))
      vi.stubEnv(name, value);
    const traced = await startLambdaRuntime();
    for (const client of [traced.clients.dynamo, traced.clients.sqs, traced.clients.scheduler]) {
      expect(client.middlewareStack.identify().join()).toMatch(/XRaySDKInstrumentation/);
    }
    vi.stubEnv('ORRERY_TRACING', 'false');
    const untraced = await startLambdaRuntime();
    expect(untraced.clients.dynamo.middlewareStack.identify().join()).not.toMatch(/XRaySDKInstrumentation/);
  });

  it('with tracing on in a bundle built without the Tracer, fails with a ConfigError that says so', async () => {
    vi.doMock('@aws-lambda-powertools/tracer', () => {
      throw new Error("Cannot find package '@aws-lambda-powertools/tracer'");
    });
    try {
      for (const [name, value] of Object.entries({ ...ENV, ORRERY_TRACING: 'true' })) vi.stubEnv(name, value);
      await expect(startLambdaRuntime()).rejects.toThrow(
        /^ORRERY_TRACING is true, but this function was bundled without the Powertools Tracer \(JobPlatform bundles it only with `tracing: true`\)/,
      );
    } finally {
      vi.doUnmock('@aws-lambda-powertools/tracer');
    }
  });

  it('fails the build with a ConfigError naming a missing variable', async () => {
    for (const [name, value] of Object.entries({ ...ENV, ORRERY_TABLE: '' })) vi.stubEnv(name, value);
    await expect(startLambdaRuntime()).rejects.toThrow('environment variable ORRERY_TABLE is not set');
  });
});

describe('API metrics', () => {
  it('counts each job created by type (POST /jobs and the batch), not a replay of an existing id', async () => {
    const metrics = new MemoryMetrics();
    const catalog = [
      defineJobType({ type: 'echo', payload: z.record(z.string(), z.unknown()) }),
      defineJobType({ type: 'mail', payload: z.record(z.string(), z.unknown()) }),
    ];
    const api = createApiHandler({
      access: allowEveryone(),
      config: testConfig(['echo', 'mail']),
      catalog,
      store: new FakeJobStore(),
      queue: new FakeJobQueue(),
      scheduler: new FakeJobScheduler(),
      clock: new ManualClock(Date.parse('2026-03-01T12:00:00.000Z')),
      logger: createLogger({ level: 'silent' }),
      metrics,
    });
    const post = (path: string, body: unknown) =>
      api({
        version: '2.0',
        rawPath: path,
        rawQueryString: '',
        headers: { 'content-type': 'application/json' },
        requestContext: { http: { method: 'POST', path }, requestId: 'r' },
        isBase64Encoded: false,
        body: JSON.stringify(body),
      } as unknown as APIGatewayProxyEventV2);
    expect((await post('/jobs', { id: 'a', type: 'echo', payload: {} })).statusCode).toBe(201);
    expect((await post('/jobs', { id: 'a', type: 'echo', payload: {} })).statusCode).toBe(200);
    await post('/jobs/batch', {
      jobs: [{ type: 'echo', payload: {} }, { type: 'mail', payload: {} }, { type: 'nope' }],
    });
    expect(metrics.values(METRIC.enqueued, 'echo')).toEqual([1, 1]);
    expect(metrics.values(METRIC.enqueued, 'mail')).toEqual([1]);
  });
});
