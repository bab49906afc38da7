/**
 * The IAM proof of the `deployed` run (test/deployed/iam-proof.ts) on made-up calls and policies:
 * batch and transaction calls map to the actions AWS authorizes, a missing permission is named,
 * `iam:PassRole` needs its condition, queue policies are evaluated over HTTPS, every unused
 * line needs a verdict, and a DynamoDB request carries the partition keys it names
 * (`dynamodb:LeadingKeys`), so a condition on them is evaluated, not passed for want of the key.
 * DynamoDB calls are recorded from the request the SDK sends (recording-proxy.ts `describeCall`).
 */
import { describe, expect, it } from 'vitest';
import { journalKey } from '../../shared/core/journal';
import type { DeployedApp } from '../deployed/deploy';
import { type IamProofInput, iamFailures, iamRequestsOf, proveIam, renderIamReport } from '../deployed/iam-proof';
import { type AwsCallRecord, describeCall, type Principal } from '../deployed/recording-proxy';

const ACCOUNT = '123456789012';
const REGION = 'us-east-1';
const TABLE = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/jobs`;
const queue = (name: string) => `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`;
const SCHEDULER_ROLE = `arn:aws:iam::${ACCOUNT}:role/scheduler`;
const WORKER_ROLE = `arn:aws:iam::${ACCOUNT}:role/worker-echo`;
const SCHEDULES = `arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/app-jobs/*`;
const env = {
  ORRERY_TABLE: 'jobs',
  ORRERY_QUEUE_ARN_BASE: `arn:aws:sqs:${REGION}:${ACCOUNT}:`,
  ORRERY_QUEUE_PREFIX: 'app',
  ORRERY_SCHEDULE_GROUP: 'app-jobs',
  ORRERY_SCHEDULER_ROLE_ARN: SCHEDULER_ROLE,
};

function call(action: string, service: string, resources: string[], context?: Record<string, unknown>): AwsCallRecord {
  return {
    time: '2026-11-27T00:00:00.000Z',
    principal: 'Worker',
    via: 'function',
    accessKeyId: 'ASIAWORKER',
    service,
    region: REGION,
    action,
    resources,
    ...(context ? { context } : {}),
    status: 200,
    durationMs: 1,
  };
}

/** A DynamoDB call as the recording proxy records it from the request body the SDK sends. */
function recorded(action: string, body: Record<string, unknown>): AwsCallRecord {
  const described = describeCall({
    method: 'POST',
    url: '/',
    target: `DynamoDB_20120810.${action}`,
    contentType: 'application/x-amz-json-1.0',
    body: Buffer.from(JSON.stringify(body)),
    service: 'dynamodb',
    region: REGION,
    account: ACCOUNT,
  });
  return call(described.action, 'dynamodb', described.resources, described.context);
}
const S = (value: string) => ({ S: value });
const key = (pk: string) => ({ pk: S(pk), sk: S('-') });

/** One worker (type echo) whose role has `statements`, and its ready queue with an enforce-SSL policy. */
function setup(statements: Record<string, unknown>[]): Omit<IamProofInput, 'calls'> {
  const functionArn = `arn:aws:lambda:${REGION}:${ACCOUNT}:function:worker-echo`;
  const principals = new Map<string, Principal>([
    [
      'ASIAWORKER',
      {
        name: 'Worker',
        via: 'function',
        roleArn: WORKER_ROLE,
        assumedRoleArn: `arn:aws:sts::${ACCOUNT}:assumed-role/worker-echo/fn-worker-echo`,
      },
    ],
    ['AKIACALLER', { name: 'e2e-caller', via: 'caller' }],
  ]);
  const app: IamProofInput['app'] = {
    functions: [
      {
        stackName: 'App',
        logicalId: 'Worker',
        bundleDir: '/dev/null',
        configuration: {
          FunctionName: 'worker-echo',
          FunctionArn: functionArn,
          Role: WORKER_ROLE,
          Handler: 'index.handler',
          Environment: { Variables: env },
        },
      },
    ],
    roles: [
      { roleArn: WORKER_ROLE, inline: { WorkerPolicy: { Version: '2012-10-17', Statement: statements } }, managed: [] },
    ],
    mappings: [{ UUID: 'm', EventSourceArn: queue('app_ready_echo'), FunctionArn: functionArn }],
    functionUrls: [],
    rules: [],
    queuePolicies: [
      {
        stackName: 'App',
        logicalId: 'ReadyPolicy',
        queueArns: [queue('app_ready_echo')],
        document: {
          Version: '2012-10-17',
          Statement: [
            {
              Action: 'sqs:*',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
              Effect: 'Deny',
              Principal: { AWS: '*' },
              Resource: queue('app_ready_echo'),
            },
          ],
        },
      },
    ] satisfies DeployedApp['queuePolicies'],
  };
  return { principals, app, account: ACCOUNT, justifications: {} };
}

describe('iamRequestsOf: the IAM actions AWS authorizes for a call', () => {
  it('maps SQS batch calls to the single action, per queue', () => {
    for (const [batch, single] of [
      ['SendMessageBatch', 'sqs:SendMessage'],
      ['DeleteMessageBatch', 'sqs:DeleteMessage'],
      ['ChangeMessageVisibilityBatch', 'sqs:ChangeMessageVisibility'],
    ]) {
      expect(iamRequestsOf(call(batch as string, 'sqs', [queue('q')]), ACCOUNT)).toEqual([
        { action: single, resource: queue('q') },
      ]);
    }
  });

  it('maps a transaction to the action of each item on its table, and batches to their own action per table', () => {
    const requests = iamRequestsOf(
      recorded('TransactWriteItems', {
        TransactItems: [
          { Put: { TableName: 'jobs', Item: key('job#a') } },
          { Update: { TableName: 'jobs', Key: key('job#a'), UpdateExpression: 'SET x = :x' } },
          { Delete: { TableName: 'jobs', Key: key('job#b') } },
          { ConditionCheck: { TableName: 'other', Key: key('job#c'), ConditionExpression: 'attribute_exists(pk)' } },
        ],
      }),
      ACCOUNT,
    );
    expect(Array.isArray(requests) && requests.map((r) => [r.action, r.resource])).toEqual([
      ['dynamodb:PutItem', TABLE],
      ['dynamodb:UpdateItem', TABLE],
      ['dynamodb:DeleteItem', TABLE],
      ['dynamodb:ConditionCheckItem', `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/other`],
    ]);
    expect(
      iamRequestsOf(
        recorded('TransactGetItems', { TransactItems: [{ Get: { TableName: 'jobs', Key: key('job#a') } }] }),
        ACCOUNT,
      ),
    ).toEqual([
      {
        action: 'dynamodb:GetItem',
        resource: TABLE,
        context: { 'dynamodb:LeadingKeys': ['job#a'] },
        part: 'item 1 (Get)',
      },
    ]);
    const batchGet = iamRequestsOf(
      recorded('BatchGetItem', { RequestItems: { jobs: { Keys: [key('job#a')] }, jobs2: { Keys: [key('job#b')] } } }),
      ACCOUNT,
    );
    expect(Array.isArray(batchGet) && batchGet.map((r) => [r.action, r.resource])).toEqual([
      ['dynamodb:BatchGetItem', TABLE],
      ['dynamodb:BatchGetItem', `${TABLE}2`],
    ]);
    const batchWrite = iamRequestsOf(
      recorded('BatchWriteItem', { RequestItems: { jobs: [{ PutRequest: { Item: key('job#a') } }] } }),
      ACCOUNT,
    );
    expect(Array.isArray(batchWrite) && batchWrite.map((r) => [r.action, r.resource])).toEqual([
      ['dynamodb:BatchWriteItem', TABLE],
    ]);
  });

  it('adds iam:PassRole to Scheduler for a schedule created or updated with a role', () => {
    const schedule = `arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/app-jobs/j1`;
    for (const action of ['CreateSchedule', 'UpdateSchedule']) {
      expect(iamRequestsOf(call(action, 'scheduler', [schedule], { 'iam:PassRole': SCHEDULER_ROLE }), ACCOUNT)).toEqual(
        [
          { action: `scheduler:${action}`, resource: schedule },
          {
            action: 'iam:PassRole',
            resource: SCHEDULER_ROLE,
            context: { 'iam:PassedToService': 'scheduler.amazonaws.com' },
            part: 'Target.RoleArn',
          },
        ],
      );
    }
    expect(iamRequestsOf(call('DeleteSchedule', 'scheduler', [schedule]), ACCOUNT)).toHaveLength(1);
  });

  it('reads an S3 object request (virtual-hosted or path style) as its object action on the object ARN; HEAD as GetObject', () => {
    const s3 = (method: string, url: string, host: string) =>
      describeCall({
        method,
        url,
        target: undefined,
        contentType: 'application/json',
        host,
        body: Buffer.from(''),
        service: 's3',
        region: REGION,
        account: ACCOUNT,
      });
    const put = s3('PUT', '/p/job-1/a%2Bb?x-id=PutObject', 'orrery-pl.s3.us-east-1.amazonaws.com');
    expect(put).toEqual({ action: 'PutObject', resources: ['arn:aws:s3:::orrery-pl/p/job-1/a+b'] });
    const head = s3('HEAD', '/orrery-pl/u/0123', '127.0.0.1:4566');
    expect(head).toEqual({ action: 'HeadObject', resources: ['arn:aws:s3:::orrery-pl/u/0123'] });
    expect(iamRequestsOf(call(head.action, 's3', head.resources), ACCOUNT)).toEqual([
      { action: 's3:GetObject', resource: 'arn:aws:s3:::orrery-pl/u/0123' },
    ]);
    expect(iamRequestsOf(call(put.action, 's3', put.resources), ACCOUNT)).toEqual([
      { action: 's3:PutObject', resource: 'arn:aws:s3:::orrery-pl/p/job-1/a+b' },
    ]);
  });

  it('checks a message move task on its source and its destination, and ListQueues on *', () => {
    const requests = iamRequestsOf(
      call('StartMessageMoveTask', 'sqs', [queue('app_dlq_echo')], { destinationArn: queue('app_ready_echo') }),
      ACCOUNT,
    );
    expect(Array.isArray(requests) && requests.map((r) => `${r.action} ${r.resource.split(':').pop()}`)).toEqual([
      'sqs:StartMessageMoveTask app_dlq_echo',
      'sqs:ReceiveMessage app_dlq_echo',
      'sqs:DeleteMessage app_dlq_echo',
      'sqs:GetQueueAttributes app_dlq_echo',
      'sqs:SendMessage app_ready_echo',
    ]);
    expect(iamRequestsOf(call('ListQueues', 'sqs', []), ACCOUNT)).toEqual([
      { action: 'sqs:ListQueues', resource: '*' },
    ]);
    expect(iamRequestsOf(call('TransactWriteItems', 'dynamodb', [TABLE]), ACCOUNT)).toHaveProperty('unmapped');
  });
});

describe('proveIam', () => {
  const readyStatements = [
    { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:PutItem'], Resource: TABLE },
    { Effect: 'Allow', Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage'], Resource: queue('app_ready_echo') },
    { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: queue('app_ready_*') },
    { Effect: 'Allow', Action: 'scheduler:CreateSchedule', Resource: SCHEDULES },
    {
      Effect: 'Allow',
      Action: 'iam:PassRole',
      Resource: SCHEDULER_ROLE,
      Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
    },
  ];
  const schedule = `arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/app-jobs/j1`;

  it('allows what the role grants (over HTTPS, through the queue policy) and marks the lines used', async () => {
    const proof = await proveIam({
      ...setup(readyStatements),
      calls: [
        recorded('GetItem', { TableName: 'jobs', Key: key('job#a') }),
        call('DeleteMessageBatch', 'sqs', [queue('app_ready_echo')], { entries: 2 }),
        call('SendMessageBatch', 'sqs', [queue('app_ready_other')], { entries: 1 }),
        call('CreateSchedule', 'scheduler', [schedule], { 'iam:PassRole': SCHEDULER_ROLE }),
        { ...call('Scan', 'dynamodb', [TABLE]), accessKeyId: 'AKIACALLER', principal: 'e2e-caller', via: 'caller' },
      ],
    });
    expect(proof.denied).toEqual([]);
    expect(proof.calls.notEvaluated).toEqual({ 'e2e-caller': 1 });
    expect(proof.queuePolicies).toMatchObject({
      requests: 2,
      withPolicy: 1,
      queuesWithout: [queue('app_ready_other')],
    });
    const used = proof.grants.filter((g) => g.uses > 0).map((g) => `${g.action} ${g.label}`);
    expect(used.sort()).toEqual(
      [
        'dynamodb:GetItem table',
        'sqs:DeleteMessage own ready queue',
        'sqs:SendMessage ready queues',
        'scheduler:CreateSchedule schedules of the group',
        'iam:PassRole Scheduler role',
      ].sort(),
    );
    expect([...(proof.grants.find((g) => g.action === 'sqs:SendMessage')?.matched ?? [])]).toEqual([
      queue('app_ready_other'),
    ]);
    // The lines nobody used, each needing a verdict (none given here).
    expect(proof.unjustified.map((g) => g.key).sort()).toEqual([
      'worker dynamodb:PutItem table',
      'worker sqs:ReceiveMessage own ready queue',
    ]);
    expect(iamFailures(proof)).toHaveLength(2);
  });

  it('names the function, the call and the missing permission of a denied call', async () => {
    const proof = await proveIam({
      ...setup(readyStatements),
      calls: [
        call('SendMessage', 'sqs', [queue('app_dlq_echo')]),
        recorded('TransactWriteItems', {
          TransactItems: [
            { Put: { TableName: 'jobs', Item: key('job#a') } },
            { Delete: { TableName: 'jobs', Key: key('job#a') } },
          ],
        }),
      ],
      justifications: {
        'worker dynamodb:GetItem table': { verdict: 'v', fate: 'kept' },
        'worker sqs:ReceiveMessage own ready queue': { verdict: 'v', fate: 'kept' },
        'worker sqs:DeleteMessage own ready queue': { verdict: 'v', fate: 'kept' },
        'worker sqs:SendMessage ready queues': { verdict: 'v', fate: 'kept' },
        'worker scheduler:CreateSchedule schedules of the group': { verdict: 'v', fate: 'kept' },
        'worker iam:PassRole Scheduler role': { verdict: 'v', fate: 'kept' },
      },
    });
    expect(proof.denied).toEqual([
      expect.objectContaining({
        function: 'Worker',
        kind: 'worker',
        call: 'sqs:SendMessage',
        action: 'sqs:SendMessage',
        resource: queue('app_dlq_echo'),
        result: 'ImplicitlyDenied',
        missing: `an Allow of sqs:SendMessage on ${queue('app_dlq_echo')}`,
      }),
      expect.objectContaining({
        call: 'dynamodb:TransactWriteItems (item 2 (Delete))',
        action: 'dynamodb:DeleteItem',
        resource: TABLE,
      }),
    ]);
    expect(proof.unjustified).toEqual([]);
    expect(iamFailures(proof)[0]).toContain('Worker (worker, function): sqs:SendMessage → sqs:SendMessage on');
  });

  it('denies PassRole without the scheduler condition, and a call the queue policy denies', async () => {
    const proof = await proveIam({
      ...setup([
        ...readyStatements.filter((s) => s.Action !== 'iam:PassRole'),
        {
          Effect: 'Allow',
          Action: 'iam:PassRole',
          Resource: SCHEDULER_ROLE,
          Condition: { StringEquals: { 'iam:PassedToService': 'lambda.amazonaws.com' } },
        },
      ]),
      calls: [call('CreateSchedule', 'scheduler', [schedule], { 'iam:PassRole': SCHEDULER_ROLE })],
    });
    expect(proof.denied).toEqual([
      expect.objectContaining({
        call: 'scheduler:CreateSchedule (Target.RoleArn)',
        action: 'iam:PassRole',
        missing: `an Allow of iam:PassRole on ${SCHEDULER_ROLE} with iam:PassedToService=scheduler.amazonaws.com`,
      }),
    ]);

    // A queue policy that denies the role outright (not only plain HTTP) is evaluated and named.
    const input = setup(readyStatements);
    const policy = input.app.queuePolicies[0];
    if (!policy) throw new Error('no queue policy');
    policy.document.Statement.push({
      Effect: 'Deny',
      Principal: { AWS: WORKER_ROLE },
      Action: 'sqs:DeleteMessage',
      Resource: queue('app_ready_echo'),
    });
    const denied = await proveIam({ ...input, calls: [call('DeleteMessage', 'sqs', [queue('app_ready_echo')])] });
    expect(denied.denied[0]).toMatchObject({
      result: 'ExplicitlyDenied',
      missing: "denied by the queue policy's statement 2",
    });
  });

  it('fails on a call with credentials it did not hand out, and on a justification for a line no role has', async () => {
    const proof = await proveIam({
      ...setup(readyStatements),
      calls: [
        {
          ...recorded('GetItem', { TableName: 'jobs', Key: key('job#a') }),
          accessKeyId: 'ASIASTRANGER',
          principal: 'unknown:ASIASTRANGER',
        },
      ],
      justifications: { 'worker dynamodb:DeleteTable table': { verdict: 'v', fate: 'kept' } },
    });
    expect(proof.denied[0]).toMatchObject({ result: 'not evaluated', kind: 'unknown' });
    expect(proof.staleJustifications).toEqual(['worker dynamodb:DeleteTable table']);
    expect(iamFailures(proof).some((line) => line.includes('matches no line of any role'))).toBe(true);
  });
});

describe('dynamodb:LeadingKeys: the partition key values a DynamoDB request names', () => {
  /** The worker's journal grant (infra/constructs/job-worker.ts). */
  const journalQuery = {
    Effect: 'Allow',
    Action: 'dynamodb:Query',
    Resource: TABLE,
    Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['job#*#journal'] } },
  };
  /** `DynamoJournal.load`'s Query, on partition `pk`. */
  const query = (pk: string) =>
    recorded('Query', {
      TableName: 'jobs',
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': S(pk) },
      ConsistentRead: true,
    });
  const leadingKeys = (record: AwsCallRecord) => {
    const requests = iamRequestsOf(record, ACCOUNT);
    if (!Array.isArray(requests)) throw new Error(requests.unmapped);
    return requests.map((r) => [r.action, r.resource, r.context?.['dynamodb:LeadingKeys']]);
  };

  it("allows a worker's Query of a journal partition and denies one of another partition (an inbox)", async () => {
    const proof = await proveIam({
      ...setup([journalQuery]),
      calls: [query('job#x#1#journal'), query('job#x#1#inbox')],
    });
    expect(proof.denied).toEqual([
      expect.objectContaining({
        function: 'Worker',
        call: 'dynamodb:Query',
        action: 'dynamodb:Query',
        resource: TABLE,
        context: { 'dynamodb:LeadingKeys': ['job#x#1#inbox'] },
        result: 'ImplicitlyDenied',
        missing: `an Allow of dynamodb:Query on ${TABLE} with dynamodb:LeadingKeys=job#x#1#inbox`,
        count: 1,
      }),
    ]);
    expect(proof.grants.find((g) => g.action === 'dynamodb:Query')?.uses).toBe(1);
    expect(proof.calls.leadingKeys).toEqual({ 'dynamodb:Query': 2 });
    expect(renderIamReport(proof, { writtenAt: 'now', calls: 2 })).toContain(
      'DynamoDB requests evaluated with `dynamodb:LeadingKeys` (the partition key values they name): dynamodb:Query 2.',
    );
  });

  it("allows the Query of a rerun's journal series: its partition still ends in #journal", async () => {
    const series = journalKey({ jobId: 'x', incarnation: 'mbx3k2p4', series: 'r1.mbx3k2q0a1b2c3' }, 'step', 'a').pk;
    expect(series).toBe('job#x#mbx3k2p4.r1.mbx3k2q0a1b2c3#journal');
    const proof = await proveIam({ ...setup([journalQuery]), calls: [query(series)] });
    expect(proof.denied).toEqual([]);
    expect(proof.grants.find((g) => g.action === 'dynamodb:Query')?.uses).toBe(1);
  });

  it("reads a Query's partition key from its key condition: names, a sort key condition, an index's key", () => {
    expect(
      leadingKeys(
        recorded('Query', {
          TableName: 'jobs',
          KeyConditionExpression: 'sk = :sk AND #p = :p',
          ExpressionAttributeNames: { '#p': 'pk' },
          ExpressionAttributeValues: { ':p': S('job#a#1#journal'), ':sk': S('step#x') },
        }),
      ),
    ).toEqual([['dynamodb:Query', TABLE, ['job#a#1#journal']]]);
    expect(
      leadingKeys(
        recorded('Query', {
          TableName: 'jobs',
          IndexName: 'byType',
          KeyConditionExpression: 'gsi1pk = :p AND gsi1sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':p': S('echo#3'), ':from': S('a'), ':to': S('b') },
        }),
      ),
    ).toEqual([['dynamodb:Query', `${TABLE}/index/byType`, ['echo#3']]]);
    expect(
      leadingKeys(
        recorded('Query', {
          TableName: 'jobs',
          KeyConditions: { pk: { ComparisonOperator: 'EQ', AttributeValueList: [S('job#b')] } },
        }),
      ),
    ).toEqual([['dynamodb:Query', TABLE, ['job#b']]]);
  });

  it("puts each item's partition key in: item actions, batches per table, transactions per item", () => {
    expect(leadingKeys(recorded('GetItem', { TableName: 'jobs', Key: key('job#a') }))).toEqual([
      ['dynamodb:GetItem', TABLE, ['job#a']],
    ]);
    expect(leadingKeys(recorded('PutItem', { TableName: 'jobs', Item: { ...key('job#a'), n: { N: '1' } } }))).toEqual([
      ['dynamodb:PutItem', TABLE, ['job#a']],
    ]);
    expect(
      leadingKeys(recorded('UpdateItem', { TableName: 'jobs', Key: key('job#a'), UpdateExpression: 'SET n = :n' })),
    ).toEqual([['dynamodb:UpdateItem', TABLE, ['job#a']]]);
    expect(leadingKeys(recorded('DeleteItem', { TableName: 'jobs', Key: key('job#a') }))).toEqual([
      ['dynamodb:DeleteItem', TABLE, ['job#a']],
    ]);
    expect(
      leadingKeys(
        recorded('BatchGetItem', {
          RequestItems: {
            jobs: { Keys: [key('job#a'), key('job#b'), { pk: S('job#a'), sk: S('other') }] },
            jobs2: { Keys: [key('job#c')] },
          },
        }),
      ),
    ).toEqual([
      ['dynamodb:BatchGetItem', TABLE, ['job#a', 'job#b']],
      ['dynamodb:BatchGetItem', `${TABLE}2`, ['job#c']],
    ]);
    expect(
      leadingKeys(
        recorded('BatchWriteItem', {
          RequestItems: { jobs: [{ PutRequest: { Item: key('job#a') } }, { DeleteRequest: { Key: key('job#b') } }] },
        }),
      ),
    ).toEqual([['dynamodb:BatchWriteItem', TABLE, ['job#a', 'job#b']]]);
    expect(
      leadingKeys(
        recorded('TransactWriteItems', {
          TransactItems: [
            { Put: { TableName: 'jobs', Item: key('job#a') } },
            { ConditionCheck: { TableName: 'jobs', Key: key('job#b'), ConditionExpression: 'attribute_exists(pk)' } },
          ],
        }),
      ),
    ).toEqual([
      ['dynamodb:PutItem', TABLE, ['job#a']],
      ['dynamodb:ConditionCheckItem', TABLE, ['job#b']],
    ]);
    // Scan names no partition (and AWS gives it no LeadingKeys).
    expect(leadingKeys(recorded('Scan', { TableName: 'jobs' }))).toEqual([['dynamodb:Scan', TABLE, undefined]]);
  });

  it('does not evaluate an item action or a Query whose partition key was not recorded', () => {
    for (const action of [
      'Query',
      'GetItem',
      'PutItem',
      'UpdateItem',
      'DeleteItem',
      'BatchGetItem',
      'BatchWriteItem',
    ]) {
      expect(iamRequestsOf(call(action, 'dynamodb', [TABLE]), ACCOUNT), action).toHaveProperty('unmapped');
    }
    expect(
      iamRequestsOf(
        call('TransactWriteItems', 'dynamodb', [TABLE], { operations: [{ operation: 'Put', table: 'jobs' }] }),
        ACCOUNT,
      ),
    ).toHaveProperty('unmapped');
  });
});
