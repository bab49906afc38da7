import { Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Schedule } from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { JobTable } from '../../infra/constructs/job-table';
import { QueueNaming } from '../../infra/constructs/queue-naming';
import { DUE_INDEX_NAME, Supervisor, SWEEP_INDEX_NAME } from '../../infra/constructs/supervisor';
import { ENV, platformConfigFromEnv, typesDigest } from '../../shared/config';
import {
  allowedActions,
  functionEnv,
  logicalId,
  render,
  resource,
  resources,
  roleStatements,
  synthOrrery,
  testApp,
} from './support';

const { stack, template } = synthOrrery();
const platform = stack.platform;
const supervisorId = logicalId(platform.supervisor.handler);
const ruleId = logicalId(platform.supervisor.rule);
const tableId = logicalId(platform.jobTable.table);
const statements = roleStatements(template, logicalId(platform.supervisor.handler.executionRole));
const types = [...platform.jobTypes.values()].map((t) => ({
  type: t.type,
  readyId: logicalId(t.queues.queue),
  dlqId: logicalId(t.queues.deadLetterQueue),
}));
const arn = (id: string) => JSON.stringify({ 'Fn::GetAtt': [id, 'Arn'] });

describe('supervisor', () => {
  it('is a Lambda that an EventBridge rule (not Scheduler) invokes every minute, without retries', () => {
    expect(resource(template, supervisorId).Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Timeout: 60,
      MemorySize: 512,
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [
        {
          Arn: { 'Fn::GetAtt': [supervisorId, 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0 },
        },
      ],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      FunctionName: { 'Fn::GetAtt': [supervisorId, 'Arn'] },
      Principal: 'events.amazonaws.com',
      SourceArn: { 'Fn::GetAtt': [ruleId, 'Arn'] },
    });
    expect(Object.keys(resources(template, 'AWS::Scheduler::Schedule'))).toEqual([]);
  });

  it('has the sparse byDue index to read: keyed by minute bucket + shard, sorted by due time', () => {
    const table = resource(template, tableId);
    const indexes = table.Properties?.GlobalSecondaryIndexes as { IndexName: string }[];
    expect(indexes.find((index) => index.IndexName === DUE_INDEX_NAME)).toEqual({
      IndexName: 'byDue',
      KeySchema: [
        { AttributeName: 'dueBucket', KeyType: 'HASH' },
        { AttributeName: 'dueAt', KeyType: 'RANGE' },
      ],
      // only what never changes: no write of a job but a due move touches its entry
      Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['id', 'type'] },
    });
    expect(table.Properties?.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: 'dueBucket', AttributeType: 'S' },
        { AttributeName: 'dueAt', AttributeType: 'N' },
      ]),
    );
  });

  it('may read and write job items, query only the due index, and neither scan nor delete', () => {
    const dynamo = allowedActions(statements).filter((a) => a.action.startsWith('dynamodb:'));
    const onTable = dynamo.filter((a) => a.resources === arn(tableId)).map((a) => a.action);
    expect(onTable.sort()).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
    ]);
    const query = dynamo.filter((a) => a.action === 'dynamodb:Query');
    expect(query).toHaveLength(1);
    // the due index, and byType: the creation sweep and the schedules' listing partition
    expect(query[0]?.resources).toContain(`/index/${DUE_INDEX_NAME}`);
    expect(query[0]?.resources).toContain(`/index/${SWEEP_INDEX_NAME}"`);
    expect(query[0]?.resources).not.toContain('/index/byTypeState');
    expect(dynamo).toHaveLength(5);
  });

  it('may send to every ready queue and to no DLQ, and only delete schedules of its group', () => {
    const actions = allowedActions(statements);
    const send = actions.filter((a) => a.action === 'sqs:SendMessage');
    expect(send).toHaveLength(1);
    // one pattern, whatever the number of types: <prefix>_ready_* matches every ready queue and no DLQ
    expect(send[0]?.resources).toContain('Orrery_ready_*');
    expect(send[0]?.resources).not.toContain('dlq');
    const scheduler = actions.filter((a) => a.action.startsWith('scheduler:') || a.action === 'iam:PassRole');
    expect(scheduler.map((a) => a.action)).toEqual(['scheduler:DeleteSchedule']);
    expect(JSON.stringify(scheduler[0]?.resources)).toContain(':schedule/');
    expect(actions.filter((a) => a.action.startsWith('sqs:')).map((a) => a.action)).toEqual([
      'sqs:SendMessage',
      'sqs:ListQueues', // to find the deployed types: no resource-level permission exists for it
    ]);
  });

  it('gets the queue naming and the digest of every type, including types added after it, in a form the runtime config accepts', () => {
    const rendered = Object.fromEntries(
      Object.entries(functionEnv(template, supervisorId)).map(([k, v]) => [k, render(v)]),
    );
    // as CloudFormation gives them: the bases with the pseudo parameters filled in
    const env: Record<string, string> = {
      ...rendered,
      [ENV.queueUrlBase]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/',
      [ENV.queueArnBase]: 'arn:aws:sqs:eu-west-1:123456789012:',
    };
    const config = platformConfigFromEnv(env);
    expect(config.typesDigest).toBe(typesDigest(types.map((t) => t.type)));
    expect(config.queues?.prefix).toBe('Orrery');
    expect(env[ENV.table]).toBe(`\${Ref:${tableId}}`);
  });

  it('can run on another schedule', () => {
    const s = new Stack(testApp(), 'Custom');
    const jobTable = new JobTable(s, 'Jobs');
    new Supervisor(s, 'Supervisor', {
      jobTable,
      naming: new QueueNaming(s),
      environment: {},
      schedule: Schedule.rate(Duration.minutes(5)),
    });
    Template.fromStack(s).hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(5 minutes)' });
  });
});
