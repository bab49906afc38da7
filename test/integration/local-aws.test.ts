import { createHash } from 'node:crypto';
import {
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ListTablesCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateScheduleCommand } from '@aws-sdk/client-scheduler';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2, APIGatewayProxyEventV2WithIAMAuthorizer, Context, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { sigV4Signer } from '../../shared/client/signing';
import { ManualClock } from '../../shared/core/clock';
import {
  lambdaTimeoutSeconds,
  MAX_RECEIVE_COUNT,
  RETENTION_SECONDS,
  visibilityTimeoutSeconds,
} from '../../shared/core/queue-settings';
import { JOB_TABLE } from '../../shared/core/table';
import { type LocalClients, localClients } from '../local-aws/clients';
import { deployLocal, destroyLocal, type LocalDeployment } from '../local-aws/deploy';
import { processAlive, startDynamoDbLocal } from '../local-aws/dynamodb-local';
import { startFunctionUrlServer } from '../local-aws/function-url';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { drain, runOnce, startQueueRunner } from '../local-aws/lambda-runner';
import { uniquePrefix } from '../local-aws/namespace';

const clock = new ManualClock(Date.parse('2026-06-01T00:00:00Z'));
let aws: LocalAws;
let deployment: LocalDeployment;
let clients: LocalClients;
let restoreEnv: () => void;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint'), clock, autoFire: false });
  restoreEnv = aws.applyEnv();
  clients = localClients(aws);
  deployment = await deployLocal(aws, {
    prefix: uniquePrefix('harness'),
    jobTypes: [{ type: 'echo', timeoutMs: 5_000 }],
  });
});

afterAll(async () => {
  await destroyLocal(aws, deployment);
  clients.destroy();
  restoreEnv();
  await aws.stop();
});

/** A fresh ready queue + DLQ with test-sized visibility and redrive. */
async function scratchQueues(maxReceiveCount = 3, visibilityTimeoutSeconds = 1) {
  const d = await deployLocal(aws, {
    prefix: uniquePrefix('q'),
    jobTypes: [{ type: 'work', timeoutMs: 1_000, visibilityTimeoutSeconds }],
    maxReceiveCount,
  });
  const q = d.queues.work;
  if (!q) throw new Error('no queue');
  return { ...q, deployment: d };
}

async function sendAll(url: string, bodies: string[]) {
  for (let i = 0; i < bodies.length; i += 10) {
    const entries = bodies.slice(i, i + 10).map((body, n) => ({ Id: String(n), MessageBody: body }));
    await clients.sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
  }
}

describe('environment-only SDK clients (as production builds them)', () => {
  it('reach DynamoDB Local and fauxqs with no endpoint in code, and queue URLs need no DNS tricks', async () => {
    const warn = vi.spyOn(console, 'warn');
    const sqs = new SQSClient({});
    const dynamo = new DynamoDBClient({});
    const name = `${uniquePrefix('plain')}-q`;
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
    expect(QueueUrl).toBe(`${aws.endpoints.sqs}/000000000000/${name}`);
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'hello' }));
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    expect(got.Messages?.[0]?.Body).toBe('hello');
    const ReceiptHandle = got.Messages?.[0]?.ReceiptHandle;
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle, VisibilityTimeout: 0 }));
    const again = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl, MessageSystemAttributeNames: ['ApproximateReceiveCount'] }),
    );
    expect(again.Messages?.[0]?.Attributes?.ApproximateReceiveCount).toBe('2');
    await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: again.Messages?.[0]?.ReceiptHandle }));
    expect(aws.sqs.inspect(name)).toMatchObject({ visible: 0, inFlight: 0 });
    // The route URL the API reads from ORRERY_ROUTES works with the plain client too.
    await sqs.send(new SendMessageCommand({ QueueUrl: deployment.config.routes.echo?.queueUrl, MessageBody: 'x' }));
    const tables = await dynamo.send(new ListTablesCommand({}));
    expect(tables.TableNames).toContain(deployment.config.tableName);
    // useQueueUrlAsEndpoint would warn if a queue URL's origin differed from AWS_ENDPOINT_URL_SQS.
    expect(warn).not.toHaveBeenCalled();
    await sqs.send(new DeleteQueueCommand({ QueueUrl }));
    aws.sqs.reset();
    warn.mockRestore();
    sqs.destroy();
    dynamo.destroy();
  });
});

describe('deployLocal', () => {
  it('creates the job table from JOB_TABLE with its GSIs, INCLUDE projections and TTL', async () => {
    const { Table } = await clients.dynamo.send(new DescribeTableCommand({ TableName: deployment.config.tableName }));
    expect(Table?.KeySchema).toEqual([
      { AttributeName: JOB_TABLE.partitionKey, KeyType: 'HASH' },
      { AttributeName: JOB_TABLE.sortKey, KeyType: 'RANGE' },
    ]);
    expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
    const gsis = Object.fromEntries((Table?.GlobalSecondaryIndexes ?? []).map((g) => [g.IndexName, g]));
    for (const index of JOB_TABLE.indexes) {
      const gsi = gsis[index.name];
      expect(gsi?.KeySchema).toEqual([
        { AttributeName: index.partitionKey, KeyType: 'HASH' },
        { AttributeName: index.sortKey, KeyType: 'RANGE' },
      ]);
      expect(gsi?.Projection?.ProjectionType).toBe('INCLUDE');
      expect([...(gsi?.Projection?.NonKeyAttributes ?? [])].sort()).toEqual([...index.include].sort());
    }
    const ttl = await clients.dynamo.send(new DescribeTimeToLiveCommand({ TableName: deployment.config.tableName }));
    expect(ttl.TimeToLiveDescription).toMatchObject({
      TimeToLiveStatus: 'ENABLED',
      AttributeName: JOB_TABLE.ttlAttribute,
    });
  });

  it('creates ready queue + DLQ per job type with the settings from queue-settings', async () => {
    const q = deployment.queues.echo;
    const { Attributes } = await clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: q?.url, AttributeNames: ['All'] }),
    );
    expect(Number(Attributes?.VisibilityTimeout)).toBe(visibilityTimeoutSeconds(lambdaTimeoutSeconds(5_000)));
    expect(Number(Attributes?.MessageRetentionPeriod)).toBe(RETENTION_SECONDS);
    expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}')).toMatchObject({
      deadLetterTargetArn: q?.dlqArn,
      maxReceiveCount: MAX_RECEIVE_COUNT,
    });
    expect(deployment.config.routes.echo).toEqual({
      queueUrl: q?.url,
      queueArn: q?.arn,
      dlqUrl: q?.dlqUrl,
      dlqArn: q?.dlqArn,
      maxReceiveCount: MAX_RECEIVE_COUNT,
    });
    expect(deployment.env.ORRERY_TABLE).toBe(deployment.config.tableName);
  });

  it('can run again with the same prefix, and destroyLocal tolerates what is already gone', async () => {
    const options = { prefix: uniquePrefix('again'), jobTypes: [{ type: 'echo', timeoutMs: 5_000 }] };
    const first = await deployLocal(aws, options);
    expect(await deployLocal(aws, options)).toEqual(first);
    await destroyLocal(aws, first);
    await destroyLocal(aws, first);
    const tables = await clients.dynamo.send(new ListTablesCommand({}));
    expect(tables.TableNames).not.toContain(first.config.tableName);
  });

  it('creates the schedule group, and the stand-in delivers a schedule to the queue by ARN', async () => {
    const q = deployment.queues.echo;
    await clients.scheduler.send(
      new CreateScheduleCommand({
        Name: 'harness-fire',
        GroupName: deployment.config.scheduleGroup,
        ScheduleExpression: `at(${new Date(clock.now() + 60_000).toISOString().slice(0, 19)})`,
        FlexibleTimeWindow: { Mode: 'OFF' },
        ActionAfterCompletion: 'DELETE',
        Target: { Arn: q?.arn, RoleArn: deployment.config.schedulerRoleArn, Input: '{"fired":true}' },
      }),
    );
    expect(await aws.scheduler.fireDue()).toBe(0);
    clock.advance(61_000);
    expect(await aws.scheduler.fireDue()).toBe(1);
    const got = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: q?.url, WaitTimeSeconds: 1 }));
    expect(got.Messages?.[0]?.Body).toBe('{"fired":true}');
    aws.sqs.reset();
  });
});

describe('DynamoDB Local semantics', () => {
  it('fails a conditional write with ConditionalCheckFailedException carrying the ALL_OLD item', async () => {
    const item = { pk: { S: 'job#cond' }, sk: { S: '-' }, state: { S: 'queued' } };
    const put = (Item: typeof item) =>
      clients.dynamo.send(
        new PutItemCommand({
          TableName: deployment.config.tableName,
          Item,
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    await put(item);
    const error = await put({ pk: { S: 'job#cond' }, sk: { S: '-' }, state: { S: 'running' } }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: 'ConditionalCheckFailedException', Item: item });
  });
});

describe('SQS redrive', () => {
  it('moves a message to the DLQ after maxReceiveCount receives', async () => {
    const q = await scratchQueues(2);
    await sendAll(q.url, ['poison']);
    const failing = async () => {
      throw new Error('boom');
    };
    for (let i = 0; i < 2; i++) {
      const run = await runOnce({
        queueUrl: q.url,
        queueArn: q.arn,
        functionName: 'f',
        handler: failing,
        visibilityTimeoutSeconds: 0,
      });
      expect(run.messageIds).toHaveLength(1);
    }
    expect(
      (await runOnce({ queueUrl: q.url, queueArn: q.arn, functionName: 'f', handler: failing, waitTimeSeconds: 0 }))
        .messageIds,
    ).toEqual([]);
    const dead = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: q.dlqUrl, WaitTimeSeconds: 1 }));
    expect(dead.Messages?.[0]?.Body).toBe('poison');
    await destroyLocal(aws, q.deployment);
  });
});

describe('queue runner (SQS event source mapping)', () => {
  it('builds a real-shaped SQSEvent and Context', async () => {
    const q = await scratchQueues();
    await clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: q.url,
        MessageBody: '{"a":1}',
        MessageAttributes: { kind: { DataType: 'String', StringValue: 'k' } },
      }),
    );
    let seen: { event: SQSEvent; context: Context; remaining: number } | undefined;
    await runOnce({
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: 'shape',
      timeoutMs: 5_000,
      handler: async (event, context) => {
        seen = { event, context, remaining: context.getRemainingTimeInMillis() };
      },
    });
    const record = seen?.event.Records[0];
    expect(record).toMatchObject({
      body: '{"a":1}',
      md5OfBody: createHash('md5').update('{"a":1}').digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: q.arn,
      awsRegion: 'us-east-1',
      messageAttributes: { kind: { stringValue: 'k', stringListValues: [], binaryListValues: [], dataType: 'String' } },
      attributes: { ApproximateReceiveCount: '1', SenderId: expect.any(String) },
    });
    expect(Number(record?.attributes.SentTimestamp)).toBeGreaterThan(0);
    expect(Number(record?.attributes.ApproximateFirstReceiveTimestamp)).toBeGreaterThanOrEqual(
      Number(record?.attributes.SentTimestamp),
    );
    expect(record?.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(record?.receiptHandle).toBeTruthy();
    expect(seen?.context).toMatchObject({
      functionName: 'shape',
      functionVersion: '$LATEST',
      invokedFunctionArn: expect.stringContaining(':function:shape'),
    });
    expect(seen?.remaining).toBeGreaterThan(4_000);
    expect(seen?.remaining).toBeLessThanOrEqual(5_000);
    await destroyLocal(aws, q.deployment);
  });

  it('deletes only the records not listed in batchItemFailures', async () => {
    const q = await scratchQueues();
    await sendAll(q.url, ['ok-1', 'fail', 'ok-2', 'ok-3']);
    const run = await runOnce({
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: 'f',
      handler: async (event) => ({
        batchItemFailures: event.Records.filter((r) => r.body === 'fail').map((r) => ({ itemIdentifier: r.messageId })),
      }),
    });
    expect(run.messageIds).toHaveLength(4);
    expect(run.failedIds).toHaveLength(1);
    expect(aws.sqs.inspect(q.url.split('/').pop() ?? '')).toMatchObject({ visible: 0, inFlight: 1 });
    await new Promise((r) => setTimeout(r, 1_100)); // visibility timeout (1 s) passes
    const again = await runOnce({
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: 'f',
      handler: async (event) => {
        expect(event.Records.map((r) => [r.body, r.attributes.ApproximateReceiveCount])).toEqual([['fail', '2']]);
      },
    });
    expect(again.failedIds).toEqual([]);
    await drain({ queueUrl: q.url, timeoutMs: 1_000 });
    await destroyLocal(aws, q.deployment);
  });

  it('leaves the whole batch when the handler throws, or returns an unknown itemIdentifier', async () => {
    const q = await scratchQueues(10);
    const name = q.url.split('/').pop() ?? '';
    await sendAll(q.url, ['a', 'b', 'c']);
    const thrown = await runOnce({
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: 'f',
      handler: async () => {
        throw new Error('whole batch');
      },
    });
    expect(thrown.failedIds).toHaveLength(3);
    expect(aws.sqs.inspect(name)).toMatchObject({ visible: 0, inFlight: 3 });
    await new Promise((r) => setTimeout(r, 1_100));
    const invalid = await runOnce({
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: 'f',
      handler: async () => ({
        batchItemFailures: [{ itemIdentifier: 'not-a-message-id' }],
      }),
    });
    expect(invalid.messageIds).toHaveLength(3);
    expect(invalid.failedIds).toHaveLength(3);
    expect(aws.sqs.inspect(name)).toMatchObject({ visible: 0, inFlight: 3 });
    await destroyLocal(aws, q.deployment);
  });

  it('never runs more than maxConcurrency invocations at once', async () => {
    const q = await scratchQueues(3, 30);
    await sendAll(
      q.url,
      Array.from({ length: 16 }, (_, i) => `m${i}`),
    );
    let active = 0;
    let peak = 0;
    const runner = startQueueRunner({
      queueUrl: q.url,
      queueArn: q.arn,
      functionName: 'f',
      batchSize: 1,
      maxConcurrency: 3,
      handler: async () => {
        active += 1;
        peak = Math.max(peak, active);
        await new Promise((r) => setTimeout(r, 100));
        active -= 1;
      },
    });
    await drain({ queueUrl: q.url, timeoutMs: 10_000 });
    await runner.stop();
    expect(runner.stats).toMatchObject({ invocations: 16, messages: 16, failures: 0 });
    expect(peak).toBe(3);
    await destroyLocal(aws, q.deployment);
  });
});

describe('DynamoDB Local process', () => {
  it('says how to install Java when it is missing', async () => {
    const saved = { PATH: process.env.PATH, JAVA_HOME: process.env.JAVA_HOME };
    process.env.PATH = '/nonexistent';
    delete process.env.JAVA_HOME;
    try {
      await expect(startDynamoDbLocal()).rejects.toThrow(/apt-get install -y openjdk-17-jre-headless/);
    } finally {
      Object.assign(process.env, saved);
      if (saved.JAVA_HOME === undefined) delete process.env.JAVA_HOME;
    }
  });

  it('leaves no JVM behind after stop', async () => {
    expect(processAlive(inject('dynamodbPid'))).toBe(true);
    const own = await startDynamoDbLocal();
    expect(processAlive(own.pid)).toBe(true);
    await own.stop();
    expect(processAlive(own.pid)).toBe(false);
  });
});

describe('function URL server', () => {
  it('turns a request into a payload 2.0 event and maps a structured result back', async () => {
    let event: APIGatewayProxyEventV2 | undefined;
    const server = await startFunctionUrlServer({
      handler: async (e) => {
        event = e;
        return {
          statusCode: 201,
          headers: { 'x-custom': 'yes', 'content-type': 'text/plain' },
          body: 'created',
          cookies: ['a=1; Path=/', 'b=2'],
        };
      },
    });
    const res = await fetch(`${server.url}/jobs/abc?x=1&x=2&y=%20z`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Multi': 'one', cookie: 'c1=v1; c2=v2', 'user-agent': 'vitest' },
      body: '{"type":"echo"}',
    });
    expect(res.status).toBe(201);
    expect(await res.text()).toBe('created');
    expect(res.headers.get('x-custom')).toBe('yes');
    expect(res.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2']);
    expect(res.headers.get('x-amzn-requestid')).toBe(event?.requestContext.requestId);
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: '$default',
      rawPath: '/jobs/abc',
      rawQueryString: 'x=1&x=2&y=%20z',
      queryStringParameters: { x: '1,2', y: ' z' },
      cookies: ['c1=v1', 'c2=v2'],
      headers: { 'content-type': 'application/json', 'x-multi': 'one', 'user-agent': 'vitest' },
      body: '{"type":"echo"}',
      isBase64Encoded: false,
      requestContext: {
        accountId: 'anonymous',
        http: { method: 'POST', path: '/jobs/abc', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'vitest' },
        routeKey: '$default',
        stage: '$default',
        timeEpoch: expect.any(Number),
      },
    });
    expect(event?.headers.cookie).toBeUndefined();
    expect(event?.requestContext.domainName).toMatch(/\.lambda-url\.us-east-1\.on\.aws$/);
    expect(event?.requestContext.time).toMatch(/^\d{2}\/\w{3}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
    await server.stop();
  });

  it('base64-encodes binary bodies, infers 200 JSON, and maps errors and limits like AWS', async () => {
    const events: APIGatewayProxyEventV2[] = [];
    const server = await startFunctionUrlServer({
      timeoutMs: 200,
      handler: async (e) => {
        events.push(e);
        if (e.rawPath === '/throw') throw new Error('bug');
        if (e.rawPath === '/slow') await new Promise((r) => setTimeout(r, 400));
        if (e.rawPath === '/string') return 'hi';
        return { ok: true };
      },
    });
    const binary = await fetch(`${server.url}/bin`, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array([0, 255, 1]),
    });
    expect(binary.status).toBe(200);
    expect(binary.headers.get('content-type')).toBe('application/json');
    expect(await binary.json()).toEqual({ ok: true });
    expect(events[0]).toMatchObject({ isBase64Encoded: true, body: Buffer.from([0, 255, 1]).toString('base64') });
    expect(await (await fetch(`${server.url}/string`)).text()).toBe('"hi"');
    expect(events[1]?.body).toBeUndefined();
    const thrown = await fetch(`${server.url}/throw`);
    expect([thrown.status, await thrown.json()]).toEqual([502, { Message: 'Internal Server Error' }]);
    expect((await fetch(`${server.url}/slow`)).status).toBe(502);
    const big = await fetch(`${server.url}/big`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x'.repeat(6 * 1024 * 1024 + 1),
    });
    expect(big.status).toBe(413);
    expect(events.map((e) => e.rawPath)).not.toContain('/big');
    await server.stop();
  });

  it('with AWS_IAM, rejects unsigned requests and fills the IAM authorizer for signed ones', async () => {
    let event: APIGatewayProxyEventV2WithIAMAuthorizer | undefined;
    const server = await startFunctionUrlServer({
      authType: 'AWS_IAM',
      handler: async (e) => {
        event = e as APIGatewayProxyEventV2WithIAMAuthorizer;
        return { statusCode: 204 };
      },
    });
    expect((await fetch(`${server.url}/jobs`)).status).toBe(403);
    const signed = await fetch(`${server.url}/jobs`, {
      headers: {
        authorization:
          'AWS4-HMAC-SHA256 Credential=AKIDLOCAL/20260601/us-east-1/lambda/aws4_request, SignedHeaders=host, Signature=00',
      },
    });
    expect(signed.status).toBe(204);
    expect(event?.requestContext.authorizer.iam).toMatchObject({ accessKey: 'AKIDLOCAL', accountId: '000000000000' });
    await server.stop();
  });

  it('with AWS_IAM and known secrets, verifies each signature as AWS does', async () => {
    const server = await startFunctionUrlServer({
      authType: 'AWS_IAM',
      secrets: { AKIDLOCAL: 'right' },
      handler: async () => ({ statusCode: 204 }),
    });
    const send = async (secret: string, accessKeyId = 'AKIDLOCAL', region = 'us-east-1') => {
      const url = new URL(`${server.url}/jobs/a%20b/retry?x=1&y=two`);
      const body = '{"k":"v"}';
      const sign = sigV4Signer({ region, credentials: { accessKeyId, secretAccessKey: secret } });
      const headers = await sign({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body });
      delete headers.host;
      return (await fetch(url, { method: 'POST', headers, body })).status;
    };
    expect(await send('right')).toBe(204);
    expect(await send('wrong')).toBe(403);
    expect(await send('right', 'AKIDOTHER')).toBe(403);
    expect(await send('right', 'AKIDLOCAL', 'eu-west-1')).toBe(403);
    await server.stop();
  });
});
