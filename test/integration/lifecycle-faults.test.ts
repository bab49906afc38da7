/**
 * The fault injector the lifecycle and chaos tests rely on (test/support/faults.ts), checked
 * against local AWS: its faults are seen and retried by the SDK's own retry strategy, `after`
 * faults are applied before their response is lost, `before` faults are not, escaping faults
 * reach the caller as the SDK's own errors, and a killed scope's calls never complete.
 */

import { DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { keyOf } from '../../shared/aws/attributes';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { ThrottledError } from '../../shared/errors';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { deployLocal, destroyLocal, type LocalDeployment } from '../local-aws/deploy';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { uniquePrefix } from '../local-aws/namespace';
import { DeadZones, FaultInjector, type FaultKind, type FaultPhase } from '../support/faults';

let aws: LocalAws;
let deployment: LocalDeployment;
let dynamo: DynamoDBClient;
let sqs: SQSClient;
const faults = new FaultInjector();
const deadZones = new DeadZones();
const zoned = new FaultInjector({ deadZones });
let zonedDynamo: DynamoDBClient;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  deployment = await deployLocal(aws, {
    prefix: uniquePrefix('faults'),
    jobTypes: [{ type: 'probe', timeoutMs: 1000 }],
  });
  const common = { region: aws.region, credentials: LOCAL_CREDENTIALS };
  dynamo = new DynamoDBClient({ ...common, endpoint: aws.endpoints.dynamodb });
  sqs = new SQSClient({ ...common, endpoint: aws.endpoints.sqs });
  zonedDynamo = new DynamoDBClient({ ...common, endpoint: aws.endpoints.dynamodb });
  faults.install(dynamo, 'dynamodb');
  faults.install(sqs, 'sqs');
  zoned.install(zonedDynamo, 'dynamodb');
});

afterAll(async () => {
  dynamo?.destroy();
  sqs?.destroy();
  zonedDynamo?.destroy();
  if (deployment) await destroyLocal(aws, deployment);
  await aws?.stop();
});

const table = () => deployment.config.tableName;
let counter = 0;

/** ADD 1 to a counter item: not idempotent, so it shows how often the write was applied. */
async function increment(client: DynamoDBClient, key: string) {
  return client.send(
    new UpdateItemCommand({
      TableName: table(),
      Key: keyOf(`job#${key}`),
      UpdateExpression: 'ADD n :one',
      ExpressionAttributeValues: { ':one': { N: '1' } },
    }),
  );
}

async function countOf(key: string): Promise<number> {
  const out = await dynamo.send(
    new GetItemCommand({ TableName: table(), Key: keyOf(`job#${key}`), ConsistentRead: true }),
  );
  return Number(out.Item?.n?.N ?? 0);
}

describe('fault injection at the SDK middleware level', () => {
  const cases: [FaultKind, FaultPhase, number][] = [
    ['throttle', 'before', 1],
    ['throttle', 'after', 2],
    ['server', 'before', 1],
    ['server', 'after', 2],
    ['timeout', 'before', 1],
    ['timeout', 'after', 2],
  ];
  it.each(cases)('a %s fault %s the request is retried by the SDK (applied %i×)', async (kind, phase, applied) => {
    const key = `counter-${++counter}`;
    faults.script({ match: (c) => c.op === 'UpdateItem:other' && c.jobId === key, kind, phase });
    const out = await increment(dynamo, key);
    expect(out.$metadata.attempts).toBe(2);
    expect(await countOf(key)).toBe(applied);
    expect(faults.events.at(-1)).toMatchObject({ op: 'UpdateItem:other', jobId: key, kind, phase, attempt: 1 });
  });

  it('lets a fault on every attempt escape the SDK as its own error, which Orrery translates', async () => {
    const key = `counter-${++counter}`;
    faults.script({ match: (c) => c.jobId === key, kind: 'server', phase: 'before', times: 4 });
    const error = await increment(dynamo, key).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'InternalServerError', $metadata: { httpStatusCode: 500, attempts: 4 } });
    expect(await countOf(key)).toBe(0);

    faults.script({ match: (c) => c.jobId === key, kind: 'throttle', phase: 'before', times: 4 });
    await expect(new DynamoJobStore(dynamo, table()).get(key)).rejects.toBeInstanceOf(ThrottledError);

    faults.script({ match: (c) => c.command === 'SendMessage', kind: 'timeout', phase: 'after', times: 3 });
    const sent = await sqs
      .send(new SendMessageCommand({ QueueUrl: deployment.queues.probe?.url, MessageBody: 'x' }))
      .catch((e: unknown) => e);
    expect(sent).toMatchObject({ name: 'TimeoutError', code: 'ECONNRESET', $metadata: { attempts: 3 } });
  });

  it('never completes a call made from a killed scope, and leaves other scopes alone', async () => {
    const key = `counter-${++counter}`;
    const { result, killed } = deadZones.run(async () => {
      await increment(zonedDynamo, key);
      deadZones.killCurrent();
      await increment(zonedDynamo, key);
      return 'returned';
    });
    await killed;
    const settled = await Promise.race([result, new Promise((r) => setTimeout(() => r('still pending'), 500))]);
    expect(settled).toBe('still pending');
    expect(await countOf(key)).toBe(1);
    await increment(zonedDynamo, key); // outside the scope
    expect(await countOf(key)).toBe(2);
  });
});
