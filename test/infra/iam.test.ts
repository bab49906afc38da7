import { Stack } from 'aws-cdk-lib';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { echoJob } from '../../functions/jobs/catalog';
import { JobPlatform } from '../../infra/constructs/job-platform';
import {
  allowedActions,
  asArray,
  flatTemplate,
  logicalId,
  type PolicyStatementJson,
  prop,
  resources,
  roleStatements,
  synthOrrery,
  testApp,
} from './support';

const { stack, template } = synthOrrery();
const platform = stack.platform;
const tableId = logicalId(platform.jobTable.table);
const schedulerRoleId = logicalId(platform.scheduler.role);
const types = [...platform.jobTypes.values()].map((t) => ({
  type: t.type,
  roleId: logicalId(t.worker.handler.executionRole),
  readyId: logicalId(t.queues.queue),
  dlqId: logicalId(t.queues.deadLetterQueue),
}));
const apiStatements = roleStatements(template, logicalId(platform.api.handler.executionRole));
const scheduleArns = JSON.stringify(stack.resolve(platform.scheduler.scheduleArns));
const arn = (id: string) => JSON.stringify({ 'Fn::GetAtt': [id, 'Arn'] });
/** `arn:…:sqs:<region>:<account>:Orrery_ready_*` and `…:Orrery_dlq_*`: one line each, whatever the number of types. */
const readyQueues = JSON.stringify(stack.resolve(platform.queueNaming.readyQueueArns));
const deadLetterQueues = JSON.stringify(stack.resolve(platform.queueNaming.deadLetterQueueArns));

function passRoleIsScoped(statements: PolicyStatementJson[]): void {
  const passRole = statements.filter((s) => asArray(s.Action).includes('iam:PassRole'));
  expect(passRole).toHaveLength(1);
  expect(passRole[0]?.Resource).toEqual({ 'Fn::GetAtt': [schedulerRoleId, 'Arn'] });
  expect(passRole[0]?.Condition).toEqual({ StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } });
}

describe('IAM least privilege', () => {
  it('never allows a wildcard action, and "*" resources only for X-Ray and the supervisor\'s and API\'s ListQueues', () => {
    const listing = [platform.supervisor.handler.executionRole, platform.api.handler.executionRole].map((role) =>
      JSON.stringify([{ Ref: logicalId(role) }]),
    );
    for (const [id, policy] of Object.entries(resources(template, 'AWS::IAM::Policy'))) {
      const statements = prop<{ Statement: PolicyStatementJson[] }>(policy, 'PolicyDocument').Statement;
      const ofSupervisor = listing.includes(JSON.stringify(policy.Properties?.Roles));
      for (const { action, resources: res } of allowedActions(statements)) {
        expect(action, id).not.toContain('*');
        // ListQueues has no resource-level permission: the supervisor (and the API, when its catalog
        // differs from the deployment) finds the deployed types with it
        const allowed = ofSupervisor
          ? /^(xray:Put(TraceSegments|TelemetryRecords)|sqs:ListQueues)$/
          : /^xray:Put(TraceSegments|TelemetryRecords)$/;
        if (res === '"*"') expect(action, id).toMatch(allowed);
      }
    }
  });

  it('lets a worker touch only job items, consume only its own queue, send only to ready queues, and only create schedules', () => {
    for (const t of types) {
      const statements = roleStatements(template, t.roleId);
      const actions = allowedActions(statements);
      const dynamo = actions.filter((a) => a.action.startsWith('dynamodb:'));
      expect(dynamo.map((a) => a.action).sort()).toEqual([
        'dynamodb:BatchGetItem',
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
      ]);
      for (const a of dynamo) expect(a.resources, t.type).toBe(arn(tableId)); // the table only, no index/*
      // the Query loads a resumed workflow's journal, a ranked line's head, and an event wait's
      // match key (ctx.waitForEvent's look; ctx.emit's waiters): those partitions only
      const query = statements.find((s) => JSON.stringify(s.Action) === JSON.stringify('dynamodb:Query'));
      expect(query?.Condition).toEqual({
        'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['job#*#journal', 'flowq#*', 'evmatch#*'] },
      });
      // the only deletes are a ranked line's admitted entries
      const deletes = statements.find((s) => JSON.stringify(s.Action) === JSON.stringify('dynamodb:DeleteItem'));
      expect(deletes?.Condition).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['flowq#*'] } });
      const sqs = actions.filter((a) => a.action.startsWith('sqs:'));
      expect(sqs.map((a) => a.action)).toContain('sqs:ChangeMessageVisibility');
      // the children it releases and the waiting jobs it hands a slot to may be of any type
      expect(sqs.filter((a) => a.action === 'sqs:SendMessage')).toEqual([
        { action: 'sqs:SendMessage', resources: readyQueues },
      ]);
      for (const a of sqs.filter((s) => s.action !== 'sqs:SendMessage')) {
        expect(a.resources, `${t.type} ${a.action}`).toBe(arn(t.readyId));
      }
      const scheduler = actions.filter((a) => a.action.startsWith('scheduler:'));
      expect(scheduler).toEqual([{ action: 'scheduler:CreateSchedule', resources: scheduleArns }]);
      passRoleIsScoped(statements);
    }
  });

  it("gives no worker any permission on a DLQ, and none on another type's queue but SendMessage", () => {
    for (const t of types) {
      const text = JSON.stringify(roleStatements(template, t.roleId));
      expect(text).not.toContain('_dlq_');
      for (const other of types.filter((o) => o.type !== t.type)) {
        expect(text, `${t.type} -> ${other.type}`).not.toContain(other.readyId);
        expect(text, `${t.type} -> ${other.type}`).not.toContain(other.dlqId);
      }
    }
    expect(readyQueues).toContain(':Orrery_ready_*');
  });

  it('lets the API read and write job items and query the listing GSIs, but not scan or manage the table', () => {
    const dynamo = allowedActions(apiStatements).filter((a) => a.action.startsWith('dynamodb:'));
    const items = ['dynamodb:BatchGetItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem'];
    expect([...new Set(dynamo.map((a) => a.action))].sort()).toEqual(
      [...items, 'dynamodb:Query', 'dynamodb:UpdateItem'].sort(),
    );
    // Item actions on the table; Query on the two listing indexes (the due index is the
    // supervisor's), and on the table only for ranked lines (the next test)
    for (const a of dynamo.filter((d) => d.action !== 'dynamodb:Query'))
      expect(a.resources, a.action).toBe(arn(tableId));
    const query = dynamo.find((a) => a.action === 'dynamodb:Query' && a.resources !== arn(tableId))?.resources ?? '';
    expect(query).toContain('/index/byType"');
    expect(query).toContain('/index/byTypeState"');
    expect(query).not.toContain('byDue');
    expect(query).not.toContain('index/*');
  });

  it("lets the API query the table only for a slot's ranked line (`flowq#…`), an event's match keys (`evmatch#…`) and a job's journal", () => {
    // KeyLimitsService.handOn → FlowSlots.admit → a ranked line's head is a Query on the table
    // (shared/aws/flow-slots/ranked-line.ts); GET /types/{type}/keys/{key} lists the line the same way
    const onTable = apiStatements.filter(
      (s) => asArray(s.Action).includes('dynamodb:Query') && JSON.stringify(s.Resource) === arn(tableId),
    );
    expect(onTable).toHaveLength(1);
    // POST /events reads the waits of an event that declares matchOn (shared/api/events-service.ts);
    // POST /jobs/{id}/rerun reads the journal it cuts (shared/api/control-service.ts)
    expect(onTable[0]?.Condition).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['flowq#*', 'evmatch#*', 'job#*#journal'] },
    });
  });

  it("lets the API's item actions reach every partition it writes: no dynamodb:LeadingKeys condition to keep in step", () => {
    // The API reads and writes jobs (`job#...`), schedules (`schedule#...`), flows and flow-control
    // entries, and each type's last DLQ redrive (`dlq#<type>`: PutItem by a redrive, GetItem by GET /dlq).
    const items = apiStatements.filter((s) =>
      asArray(s.Action).some((a) => a === 'dynamodb:PutItem' || a === 'dynamodb:GetItem'),
    );
    expect(items.length).toBeGreaterThan(0);
    for (const statement of items) expect(statement.Condition, JSON.stringify(statement.Action)).toBeUndefined();
  });

  it('lets the API send to every ready queue and to no DLQ', () => {
    const send = allowedActions(apiStatements).filter((a) => a.action === 'sqs:SendMessage');
    expect(send).toEqual([{ action: 'sqs:SendMessage', resources: readyQueues }]);
  });

  it('lets the API peek at and redrive every DLQ (receive, delete, move tasks), and no other queue', () => {
    const dlqActions = [
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:ListMessageMoveTasks',
      'sqs:ReceiveMessage',
      'sqs:StartMessageMoveTask',
    ];
    const sqs = allowedActions(apiStatements).filter((a) => a.action.startsWith('sqs:'));
    // and ListQueues (no resource-level form): only when its catalog differs from the deployed types
    expect(sqs.map((a) => a.action).sort()).toEqual([...dlqActions, 'sqs:SendMessage', 'sqs:ListQueues'].sort());
    expect(sqs.filter((a) => a.action === 'sqs:ListQueues')).toEqual([{ action: 'sqs:ListQueues', resources: '"*"' }]);
    for (const a of sqs.filter((s) => s.action !== 'sqs:SendMessage' && s.action !== 'sqs:ListQueues')) {
      expect(a.resources, a.action).toBe(deadLetterQueues);
    }
    expect(deadLetterQueues).toContain(':Orrery_dlq_*');
  });

  it('lets the API create, update and delete schedules of its group only, and pass only the Scheduler role', () => {
    const scheduler = allowedActions(apiStatements).filter((a) => a.action.startsWith('scheduler:'));
    expect(scheduler.map((a) => a.action).sort()).toEqual([
      'scheduler:CreateSchedule',
      'scheduler:DeleteSchedule',
      'scheduler:UpdateSchedule', // recurring schedules: pause, resume, change
    ]);
    for (const a of scheduler) expect(a.resources).toBe(scheduleArns);
    expect(scheduleArns).toContain(':schedule/Orrery-jobs/*');
    passRoleIsScoped(apiStatements);
  });

  it('lets Scheduler assume its role only for this account and schedule group, and only send to ready queues', () => {
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          {
            Action: 'sts:AssumeRole',
            Effect: 'Allow',
            Principal: { Service: 'scheduler.amazonaws.com' },
            Condition: {
              StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
              ArnEquals: { 'aws:SourceArn': { 'Fn::GetAtt': [logicalId(platform.scheduler.group), 'Arn'] } },
            },
          },
        ],
      },
    });
    const actions = allowedActions(roleStatements(template, schedulerRoleId));
    expect(actions).toHaveLength(1);
    expect(actions[0]?.action).toBe('sqs:SendMessage');
    expect(actions[0]?.resources).toBe(readyQueues);
  });

  it('grantEnqueue gives a caller lambda:InvokeFunctionUrl on the API for IAM-auth URLs', () => {
    const s = new Stack(testApp(), 'Grant');
    const p = new JobPlatform(s, 'Platform');
    p.addJobType({ spec: echoJob, entry: 'functions/jobs/echo.ts' });
    const caller = new Role(s, 'Caller', { assumedBy: new AccountRootPrincipal() });
    p.grantEnqueue(caller);
    const statements = roleStatements(flatTemplate(s), logicalId(caller));
    const invokeUrl = statements.find((st) => asArray(st.Action).includes('lambda:InvokeFunctionUrl'));
    expect(invokeUrl?.Resource).toEqual({ 'Fn::GetAtt': [logicalId(p.api.handler), 'Arn'] });
    expect(invokeUrl?.Condition).toEqual({ StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } });
  });
});
