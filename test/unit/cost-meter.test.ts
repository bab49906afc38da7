import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { meterCost } from '../../shared/aws/cost-middleware';
import { CostMeter } from '../../shared/lambda/cost-meter';

const credentials = { accessKeyId: 'AKIDTEST', secretAccessKey: 'test-secret' };
const decoder = new TextDecoder();
const encoder = new TextEncoder();

interface StubRequest {
  headers: Record<string, string>;
  body?: unknown;
}

type Answer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };

/** A real DynamoDB client whose transport answers from `answer`, keeping every request body sent. */
function dynamo(answer: (target: string, body: Record<string, unknown>) => Answer) {
  const sent: { target: string; body: Record<string, unknown> }[] = [];
  const client = new DynamoDBClient({
    region: 'eu-west-1',
    credentials,
    maxAttempts: 3,
    requestHandler: {
      handle: async (request: StubRequest) => {
        const target = (request.headers['x-amz-target'] ?? '').replace(/^DynamoDB_\d+\./, '');
        const body = JSON.parse(
          typeof request.body === 'string' ? request.body : decoder.decode(request.body as Uint8Array),
        ) as Record<string, unknown>;
        sent.push({ target, body });
        const out = answer(target, body);
        return {
          response: {
            statusCode: out.status,
            headers: { 'content-type': 'application/x-amz-json-1.0', ...out.headers },
            body: encoder.encode(JSON.stringify(out.body)),
          },
        };
      },
    } as never,
  });
  return { client, sent };
}

const ok = (body: Record<string, unknown> = {}): Answer => ({ status: 200, body });
const key = { pk: { S: 'job#a' }, sk: { S: '-' } };

describe('cost metering (CostMeter + meterCost on real SDK clients)', () => {
  it('asks DynamoDB writes for ReturnConsumedCapacity TOTAL and counts the units reported; reads are only requests', async () => {
    const { client, sent } = dynamo((target) =>
      target === 'GetItem' ? ok({ Item: key }) : ok({ ConsumedCapacity: { TableName: 't', CapacityUnits: 2 } }),
    );
    const meter = new CostMeter();
    meterCost(client, meter);
    const { cost } = await meter.measure(async () => {
      await client.send(new GetItemCommand({ TableName: 't', Key: key }));
      await client.send(
        new UpdateItemCommand({
          TableName: 't',
          Key: key,
          UpdateExpression: 'SET a = :a',
          ExpressionAttributeValues: { ':a': { N: '1' } },
        }),
      );
      await client.send(new PutItemCommand({ TableName: 't', Item: key }));
    });
    expect(cost).toEqual({ requests: 3, writeUnits: 4 });
    expect(sent.map((s) => [s.target, s.body.ReturnConsumedCapacity])).toEqual([
      ['GetItem', undefined],
      ['UpdateItem', 'TOTAL'],
      ['PutItem', 'TOTAL'],
    ]);
  });

  it("keeps the caller's ReturnConsumedCapacity", async () => {
    const { client, sent } = dynamo(() => ok({ ConsumedCapacity: { CapacityUnits: 1, Table: { CapacityUnits: 1 } } }));
    const meter = new CostMeter();
    meterCost(client, meter);
    await meter.measure(() =>
      client.send(new PutItemCommand({ TableName: 't', Item: key, ReturnConsumedCapacity: 'INDEXES' })),
    );
    expect(sent[0]?.body.ReturnConsumedCapacity).toBe('INDEXES');
  });

  it('counts every HTTP request, SDK retries included', async () => {
    let calls = 0;
    const { client } = dynamo(() => {
      calls += 1;
      return calls === 1
        ? { status: 500, body: { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'oops' } }
        : ok({ ConsumedCapacity: { CapacityUnits: 1 } });
    });
    const meter = new CostMeter();
    meterCost(client, meter);
    const { cost } = await meter.measure(() => client.send(new PutItemCommand({ TableName: 't', Item: key })));
    expect(calls).toBe(2);
    expect(cost).toEqual({ requests: 2, writeUnits: 1 });
  });

  it('bills a refused conditional write as AWS does: the existing item in KB (ALL_OLD), at least 1 unit', async () => {
    const big = { pk: { S: 'job#a' }, sk: { S: '-' }, blob: { S: 'x'.repeat(3000) } };
    const { client } = dynamo((_target, body) => ({
      status: 400,
      body: {
        __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
        message: 'The conditional request failed',
        ...(body.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' ? { Item: big } : {}),
      },
    }));
    const meter = new CostMeter();
    meterCost(client, meter);
    const put = (old: boolean) =>
      client
        .send(
          new PutItemCommand({
            TableName: 't',
            Item: key,
            ConditionExpression: 'attribute_not_exists(pk)',
            ...(old ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
          }),
        )
        .catch((error: unknown) => expect(error).toBeInstanceOf(ConditionalCheckFailedException));
    expect((await meter.measure(() => put(true))).cost).toEqual({ requests: 1, writeUnits: 3 });
    expect((await meter.measure(() => put(false))).cost).toEqual({ requests: 1, writeUnits: 1 });
  });

  it('gives concurrent scopes their own tallies, and counts nothing outside a scope', async () => {
    const { client } = dynamo(() => ok({ ConsumedCapacity: { CapacityUnits: 1 } }));
    const meter = new CostMeter();
    meterCost(client, meter);
    const put = () => client.send(new PutItemCommand({ TableName: 't', Item: key }));
    await put(); // outside any scope
    const [one, three] = await Promise.all([
      meter.measure(async () => {
        await put();
        return meter.current();
      }),
      meter.measure(async () => {
        await Promise.all([put(), put()]);
        // a timer started inside the scope still counts for it (a heartbeat)
        await new Promise<void>((resolve) => setTimeout(() => void put().then(() => resolve()), 1));
      }),
    ]);
    expect(one.cost).toEqual({ requests: 1, writeUnits: 1 });
    expect(one.value).toEqual({ requests: 1, writeUnits: 1 });
    expect(three.cost).toEqual({ requests: 3, writeUnits: 3 });
    expect(meter.current()).toEqual({ requests: 0, writeUnits: 0 });
  });

  it('counts SQS requests', async () => {
    const client = new SQSClient({
      region: 'eu-west-1',
      credentials,
      requestHandler: {
        handle: async () => ({
          response: {
            statusCode: 200,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            // the MD5 of the body `{}` (the SDK checks it)
            body: encoder.encode(
              JSON.stringify({ MessageId: 'm', MD5OfMessageBody: '99914b932bd37a50b983c5e7c90ae93b' }),
            ),
          },
        }),
      } as never,
    });
    const meter = new CostMeter();
    meterCost(client, meter);
    const { cost } = await meter.measure(() =>
      client.send(new SendMessageCommand({ QueueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q', MessageBody: '{}' })),
    );
    expect(cost).toEqual({ requests: 1, writeUnits: 0 });
  });
});
