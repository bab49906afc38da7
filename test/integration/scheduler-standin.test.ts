import {
  ConflictException,
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  CreateScheduleGroupCommand,
  DeleteScheduleCommand,
  DeleteScheduleGroupCommand,
  GetScheduleCommand,
  GetScheduleGroupCommand,
  ListScheduleGroupsCommand,
  ListSchedulesCommand,
  paginateListSchedules,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
  ValidationException,
} from '@aws-sdk/client-scheduler';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../shared/core/clock';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import {
  type ScheduledFire,
  type SchedulerStandIn,
  type SchedulerStandInOptions,
  sqsDeliverer,
  startSchedulerStandIn,
} from '../local-aws/scheduler-standin';
import { startLocalSqs } from '../local-aws/sqs';

const T0 = Date.parse('2026-01-01T10:00:00Z');
const MIN = 60_000;
const QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:orrery-ready';
const ROLE_ARN = 'arn:aws:iam::000000000000:role/orrery-scheduler';
const PLACEHOLDER_INPUT =
  '{"arn":"<aws.scheduler.schedule-arn>","at":"<aws.scheduler.scheduled-time>","exec":"<aws.scheduler.execution-id>","n":"<aws.scheduler.attempt-number>"}';

type AwsError = Error & { $metadata?: { httpStatusCode?: number } };

async function rejection(promise: Promise<unknown>): Promise<AwsError> {
  try {
    await promise;
  } catch (err) {
    return err as AwsError;
  }
  throw new Error('expected the call to fail');
}

function input(overrides: Partial<CreateScheduleCommandInput> = {}): CreateScheduleCommandInput {
  return {
    Name: 'job-1',
    ScheduleExpression: 'rate(5 minutes)',
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: { Arn: QUEUE_ARN, RoleArn: ROLE_ARN, Input: PLACEHOLDER_INPUT },
    ...overrides,
  };
}

function inputOf(fire: ScheduledFire): Record<string, string> {
  return JSON.parse(fire.target.Input ?? 'null') as Record<string, string>;
}

let clock: ManualClock;
let fired: ScheduledFire[];
let standIn: SchedulerStandIn;
let client: SchedulerClient;
let logs: string[];
let failNext: number;

async function start(overrides: Partial<SchedulerStandInOptions> = {}): Promise<void> {
  standIn = await startSchedulerStandIn({
    clock,
    autoFire: false,
    log: (line) => logs.push(line),
    deliver: async (fire) => {
      if (failNext > 0) {
        failNext--;
        throw new Error('target unavailable');
      }
      fired.push(fire);
    },
    ...overrides,
  });
  client = new SchedulerClient({ region: 'us-east-1', endpoint: standIn.endpoint, credentials: LOCAL_CREDENTIALS });
}

beforeEach(() => {
  clock = new ManualClock(T0);
  fired = [];
  logs = [];
  failNext = 0;
});

afterEach(async () => {
  client?.destroy();
  await standIn?.stop();
});

describe('wire protocol with the real SchedulerClient', () => {
  beforeEach(() => start());

  it('CreateSchedule returns the ARN and GetSchedule the whole schedule', async () => {
    const created = await client.send(
      new CreateScheduleCommand(
        input({
          Description: 'nightly',
          StartDate: new Date(T0 + 60 * MIN),
          EndDate: new Date(T0 + 24 * 60 * MIN),
          Target: { Arn: QUEUE_ARN, RoleArn: ROLE_ARN, Input: '{}', SqsParameters: { MessageGroupId: 'g1' } },
        }),
      ),
    );
    expect(created.ScheduleArn).toBe('arn:aws:scheduler:us-east-1:000000000000:schedule/default/job-1');

    const got = await client.send(new GetScheduleCommand({ Name: 'job-1' }));
    expect(got).toMatchObject({
      Arn: created.ScheduleArn,
      Name: 'job-1',
      GroupName: 'default',
      Description: 'nightly',
      ScheduleExpression: 'rate(5 minutes)',
      ScheduleExpressionTimezone: 'UTC',
      State: 'ENABLED',
      ActionAfterCompletion: 'NONE',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: {
        Arn: QUEUE_ARN,
        RoleArn: ROLE_ARN,
        Input: '{}',
        SqsParameters: { MessageGroupId: 'g1' },
        RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86_400 },
      },
    });
    expect(got.CreationDate).toEqual(new Date(T0));
    expect(got.LastModificationDate).toEqual(new Date(T0));
    expect(got.StartDate).toEqual(new Date(T0 + 60 * MIN));
    expect(got.EndDate).toEqual(new Date(T0 + 24 * 60 * MIN));
  });

  it('answers with the status, x-amzn-errortype header and {"Message"} body AWS uses', async () => {
    const res = await fetch(`${standIn.endpoint}/schedules/nope?groupName=default`);
    expect(res.status).toBe(404);
    expect(res.headers.get('x-amzn-errortype')).toBe('ResourceNotFoundException');
    expect(await res.json()).toEqual({ Message: 'Schedule nope does not exist.' });

    const unknown = await fetch(`${standIn.endpoint}/tags/arn:x`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('x-amzn-errortype')).toBe('UnknownOperationException');

    const badJson = await fetch(`${standIn.endpoint}/schedules/x`, {
      method: 'POST',
      body: '{nope',
      headers: { 'content-type': 'application/json' },
    });
    expect(badJson.status).toBe(400);
    expect(badJson.headers.get('x-amzn-errortype')).toBe('ValidationException');
  });

  it('creating an existing name is a ConflictException; a retry with the same ClientToken is not', async () => {
    await client.send(new CreateScheduleCommand(input({ ClientToken: 'token-1' })));
    const again = await client.send(new CreateScheduleCommand(input({ ClientToken: 'token-1' })));
    expect(again.ScheduleArn).toBe('arn:aws:scheduler:us-east-1:000000000000:schedule/default/job-1');

    const err = await rejection(client.send(new CreateScheduleCommand(input())));
    expect(err).toBeInstanceOf(ConflictException);
    expect(err.name).toBe('ConflictException');
    expect(err.$metadata?.httpStatusCode).toBe(409);
    expect(err.message).toBe('Schedule job-1 already exists.');
  });

  it('unknown schedules and groups are ResourceNotFoundException', async () => {
    const missing = await rejection(client.send(new GetScheduleCommand({ Name: 'nope' })));
    expect(missing).toBeInstanceOf(ResourceNotFoundException);
    expect(missing.name).toBe('ResourceNotFoundException');
    expect(missing.$metadata?.httpStatusCode).toBe(404);
    expect(missing.message).toBe('Schedule nope does not exist.');

    const noGroup = await rejection(client.send(new CreateScheduleCommand(input({ GroupName: 'ghosts' }))));
    expect(noGroup.name).toBe('ResourceNotFoundException');
    expect(noGroup.message).toBe('Schedule group ghosts does not exist.');

    expect((await rejection(client.send(new UpdateScheduleCommand(input({ Name: 'nope' }))))).name).toBe(
      'ResourceNotFoundException',
    );
    expect((await rejection(client.send(new DeleteScheduleCommand({ Name: 'nope' })))).name).toBe(
      'ResourceNotFoundException',
    );
    expect((await rejection(client.send(new ListSchedulesCommand({ GroupName: 'ghosts' })))).name).toBe(
      'ResourceNotFoundException',
    );
  });

  it.each<[string, Partial<CreateScheduleCommandInput>, RegExp]>([
    [
      'a bad name',
      { Name: 'bad name!' },
      /'Name' failed to satisfy constraint: Member must satisfy regular expression pattern/,
    ],
    ['a long name', { Name: 'n'.repeat(65) }, /'Name'.*length less than or equal to 64/],
    [
      'a missing FlexibleTimeWindow',
      { FlexibleTimeWindow: undefined },
      /'FlexibleTimeWindow' failed to satisfy constraint: Member must not be null/,
    ],
    ['a missing Target', { Target: undefined }, /'Target' failed to satisfy constraint: Member must not be null/],
    ['a bad RoleArn', { Target: { Arn: QUEUE_ARN, RoleArn: 'role' } }, /'Target.RoleArn'.*regular expression pattern/],
    [
      'a retry count above 185',
      { Target: { Arn: QUEUE_ARN, RoleArn: ROLE_ARN, RetryPolicy: { MaximumRetryAttempts: 186 } } },
      /MaximumRetryAttempts.*less than or equal to 185/,
    ],
    [
      'an invalid expression',
      { ScheduleExpression: 'rate(1 minutes)' },
      /Invalid schedule expression "rate\(1 minutes\)": a value of 1 needs the singular unit/,
    ],
    ['a cron with both day fields', { ScheduleExpression: 'cron(0 9 * * MON *)' }, /\? in exactly one of them/],
    [
      'an unknown time zone',
      { ScheduleExpressionTimezone: 'Mars/Olympus' },
      /Invalid ScheduleExpressionTimezone 'Mars\/Olympus'/,
    ],
    ['an unknown State', { State: 'PAUSED' as never }, /'State'.*enum value set: \[ENABLED, DISABLED\]/],
    [
      'an unknown ActionAfterCompletion',
      { ActionAfterCompletion: 'ARCHIVE' as never },
      /enum value set: \[NONE, DELETE\]/,
    ],
    ['FLEXIBLE without a window', { FlexibleTimeWindow: { Mode: 'FLEXIBLE' } }, /MaximumWindowInMinutes is required/],
    [
      'a window above 1440 minutes',
      { FlexibleTimeWindow: { Mode: 'FLEXIBLE', MaximumWindowInMinutes: 1441 } },
      /less than or equal to 1440/,
    ],
    [
      'a StartDate long past',
      { StartDate: new Date(T0 - 10 * MIN) },
      /StartDate you specify cannot be earlier than 5 minutes ago/,
    ],
    [
      'an EndDate before StartDate',
      { StartDate: new Date(T0 + 10 * MIN), EndDate: new Date(T0 + 5 * MIN) },
      /EndDate you specify must be later than the StartDate/,
    ],
  ])('rejects %s with ValidationException', async (_label, overrides, message) => {
    const err = await rejection(client.send(new CreateScheduleCommand(input(overrides))));
    expect(err).toBeInstanceOf(ValidationException);
    expect(err.name).toBe('ValidationException');
    expect(err.$metadata?.httpStatusCode).toBe(400);
    expect(err.message).toMatch(message);
    expect(standIn.list()).toEqual([]);
  });

  it('reports several constraint violations at once', async () => {
    const err = await rejection(
      client.send(new CreateScheduleCommand(input({ FlexibleTimeWindow: undefined, Target: undefined }))),
    );
    expect(err.message).toMatch(/^2 validation errors detected: /);
  });

  it('UpdateSchedule replaces the whole schedule and keeps CreationDate', async () => {
    await client.send(
      new CreateScheduleCommand(input({ Description: 'first', ScheduleExpressionTimezone: 'Europe/Berlin' })),
    );
    clock.advance(MIN);
    const updated = await client.send(
      new UpdateScheduleCommand(input({ ScheduleExpression: 'cron(0 9 ? * MON-FRI *)', State: 'DISABLED' })),
    );
    expect(updated.ScheduleArn).toBe('arn:aws:scheduler:us-east-1:000000000000:schedule/default/job-1');
    const got = await client.send(new GetScheduleCommand({ Name: 'job-1' }));
    expect(got.ScheduleExpression).toBe('cron(0 9 ? * MON-FRI *)');
    expect(got.State).toBe('DISABLED');
    expect(got.Description).toBeUndefined(); // omitted in the update → cleared, as AWS documents
    expect(got.ScheduleExpressionTimezone).toBe('UTC');
    expect(got.CreationDate).toEqual(new Date(T0));
    expect(got.LastModificationDate).toEqual(new Date(T0 + MIN));
  });

  it('DeleteSchedule deletes (with and without groupName)', async () => {
    await client.send(new CreateScheduleGroupCommand({ Name: 'jobs' }));
    await client.send(new CreateScheduleCommand(input({ GroupName: 'jobs' })));
    await client.send(new CreateScheduleCommand(input()));
    await client.send(new DeleteScheduleCommand({ Name: 'job-1', GroupName: 'jobs' }));
    expect(standIn.list().map((s) => `${s.GroupName}/${s.Name}`)).toEqual(['default/job-1']);
    await client.send(new DeleteScheduleCommand({ Name: 'job-1' }));
    expect(standIn.list()).toEqual([]);
    expect((await rejection(client.send(new GetScheduleCommand({ Name: 'job-1', GroupName: 'jobs' })))).name).toBe(
      'ResourceNotFoundException',
    );
  });

  it('ListSchedules filters by group, prefix and state, and paginates', async () => {
    await client.send(new CreateScheduleGroupCommand({ Name: 'jobs' }));
    for (const name of ['a-1', 'a-2', 'a-3', 'b-1'])
      await client.send(new CreateScheduleCommand(input({ Name: name, GroupName: 'jobs' })));
    await client.send(new CreateScheduleCommand(input({ Name: 'a-4', State: 'DISABLED' })));

    const all = await client.send(new ListSchedulesCommand({}));
    expect(all.Schedules?.map((s) => s.Name)).toEqual(['a-4', 'a-1', 'a-2', 'a-3', 'b-1']);
    expect(all.NextToken).toBeUndefined();
    expect(all.Schedules?.[1]).toEqual({
      Name: 'a-1',
      GroupName: 'jobs',
      Arn: 'arn:aws:scheduler:us-east-1:000000000000:schedule/jobs/a-1',
      State: 'ENABLED',
      CreationDate: new Date(T0),
      LastModificationDate: new Date(T0),
      Target: { Arn: QUEUE_ARN },
    });

    const filtered = await client.send(new ListSchedulesCommand({ GroupName: 'jobs', NamePrefix: 'a-' }));
    expect(filtered.Schedules?.map((s) => s.Name)).toEqual(['a-1', 'a-2', 'a-3']);
    const disabled = await client.send(new ListSchedulesCommand({ State: 'DISABLED' }));
    expect(disabled.Schedules?.map((s) => s.Name)).toEqual(['a-4']);

    const page1 = await client.send(new ListSchedulesCommand({ GroupName: 'jobs', MaxResults: 3 }));
    expect(page1.Schedules?.map((s) => s.Name)).toEqual(['a-1', 'a-2', 'a-3']);
    expect(page1.NextToken).toBeTypeOf('string');
    const page2 = await client.send(
      new ListSchedulesCommand({ GroupName: 'jobs', MaxResults: 3, NextToken: page1.NextToken }),
    );
    expect(page2.Schedules?.map((s) => s.Name)).toEqual(['b-1']);
    expect(page2.NextToken).toBeUndefined();

    const names: string[] = [];
    for await (const page of paginateListSchedules({ client, pageSize: 2 }, {}))
      names.push(...(page.Schedules ?? []).map((s) => s.Name ?? ''));
    expect(names).toEqual(['a-4', 'a-1', 'a-2', 'a-3', 'b-1']);

    expect((await rejection(client.send(new ListSchedulesCommand({ NextToken: 'garbage' })))).name).toBe(
      'ValidationException',
    );
    expect((await rejection(client.send(new ListSchedulesCommand({ MaxResults: 101 })))).message).toMatch(
      /less than or equal to 100/,
    );
  });

  it('schedule groups: create, get, list, conflict, and delete with their schedules', async () => {
    const created = await client.send(
      new CreateScheduleGroupCommand({ Name: 'jobs', Tags: [{ Key: 'app', Value: 'orrery' }] }),
    );
    expect(created.ScheduleGroupArn).toBe('arn:aws:scheduler:us-east-1:000000000000:schedule-group/jobs');
    expect((await rejection(client.send(new CreateScheduleGroupCommand({ Name: 'jobs' })))).name).toBe(
      'ConflictException',
    );

    const got = await client.send(new GetScheduleGroupCommand({ Name: 'jobs' }));
    expect(got).toMatchObject({
      Arn: created.ScheduleGroupArn,
      Name: 'jobs',
      State: 'ACTIVE',
      CreationDate: new Date(T0),
    });
    const groups = await client.send(new ListScheduleGroupsCommand({}));
    expect(groups.ScheduleGroups?.map((g) => g.Name)).toEqual(['default', 'jobs']);
    expect(
      (await client.send(new ListScheduleGroupsCommand({ NamePrefix: 'jo' }))).ScheduleGroups?.map((g) => g.Name),
    ).toEqual(['jobs']);

    await client.send(new CreateScheduleCommand(input({ GroupName: 'jobs' })));
    await client.send(new CreateScheduleCommand(input({ Name: 'keep' })));
    await client.send(new DeleteScheduleGroupCommand({ Name: 'jobs' }));
    expect(standIn.list().map((s) => s.Name)).toEqual(['keep']);
    expect((await rejection(client.send(new GetScheduleGroupCommand({ Name: 'jobs' })))).name).toBe(
      'ResourceNotFoundException',
    );
    expect((await rejection(client.send(new DeleteScheduleGroupCommand({ Name: 'jobs' })))).name).toBe(
      'ResourceNotFoundException',
    );

    const deleteDefault = await rejection(client.send(new DeleteScheduleGroupCommand({ Name: 'default' })));
    expect(deleteDefault.name).toBe('ValidationException');
    expect((await client.send(new GetScheduleGroupCommand({ Name: 'default' }))).Arn).toBe(
      'arn:aws:scheduler:us-east-1:000000000000:schedule-group/default',
    );
  });

  it('is reached through AWS_ENDPOINT_URL_SCHEDULER', async () => {
    const previous = process.env.AWS_ENDPOINT_URL_SCHEDULER;
    process.env.AWS_ENDPOINT_URL_SCHEDULER = standIn.endpoint;
    const envClient = new SchedulerClient({ region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    try {
      await envClient.send(new CreateScheduleCommand(input({ Name: 'via-env' })));
      expect(standIn.list().map((s) => s.Name)).toEqual(['via-env']);
    } finally {
      envClient.destroy();
      if (previous === undefined) delete process.env.AWS_ENDPOINT_URL_SCHEDULER;
      else process.env.AWS_ENDPOINT_URL_SCHEDULER = previous;
    }
  });

  it('deleteDirectly removes a schedule behind the API', async () => {
    await client.send(new CreateScheduleCommand(input()));
    expect(standIn.deleteDirectly('job-1')).toBe(true);
    expect(standIn.deleteDirectly('job-1')).toBe(false);
    expect((await rejection(client.send(new GetScheduleCommand({ Name: 'job-1' })))).name).toBe(
      'ResourceNotFoundException',
    );
  });
});

describe('firing on a ManualClock', () => {
  beforeEach(() => start());

  it('at() fires once with filled placeholders, then ActionAfterCompletion DELETE deletes it', async () => {
    await client.send(
      new CreateScheduleCommand(
        input({ ScheduleExpression: 'at(2026-01-01T10:30:00)', ActionAfterCompletion: 'DELETE' }),
      ),
    );
    expect(standIn.list()[0]?.nextFireAt).toBe(T0 + 30 * MIN);
    clock.advance(30 * MIN - 1);
    expect(await standIn.fireDue()).toBe(0);
    clock.advance(1);
    expect(await standIn.fireDue()).toBe(1);
    const [fire] = fired;
    const arn = 'arn:aws:scheduler:us-east-1:000000000000:schedule/default/job-1';
    expect(fire).toMatchObject({
      scheduleArn: arn,
      name: 'job-1',
      group: 'default',
      scheduledTime: T0 + 30 * MIN,
      attempt: 1,
    });
    expect(fire?.target).toMatchObject({ Arn: QUEUE_ARN, RoleArn: ROLE_ARN });
    expect(inputOf(fired[0] as ScheduledFire)).toEqual({
      arn,
      at: '2026-01-01T10:30:00Z',
      exec: fire?.executionId,
      n: '1',
    });
    expect(fire?.executionId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await rejection(client.send(new GetScheduleCommand({ Name: 'job-1' })))).name).toBe(
      'ResourceNotFoundException',
    );
    clock.advance(24 * 60 * MIN);
    expect(await standIn.fireDue()).toBe(0);
    expect(fired).toHaveLength(1);
  });

  it('at() with ActionAfterCompletion NONE stays, with no next fire', async () => {
    await client.send(new CreateScheduleCommand(input({ ScheduleExpression: 'at(2026-01-01T10:30:00)' })));
    clock.advance(60 * MIN);
    expect(await standIn.fireDue()).toBe(1);
    expect(await standIn.fireDue()).toBe(0);
    expect((await client.send(new GetScheduleCommand({ Name: 'job-1' }))).State).toBe('ENABLED');
    expect(standIn.list()[0]?.nextFireAt).toBeUndefined();
  });

  it('an at() time already past at creation never fires, and the stand-in says so', async () => {
    await client.send(new CreateScheduleCommand(input({ ScheduleExpression: 'at(2026-01-01T09:59:59)' })));
    expect(logs).toEqual([expect.stringMatching(/job-1: at\(2026-01-01T09:59:59\) \(UTC\) is already past/)]);
    clock.advance(60 * MIN);
    expect(await standIn.fireDue()).toBe(0);
  });

  it('at() is wall time in ScheduleExpressionTimezone', async () => {
    await client.send(
      new CreateScheduleCommand(
        input({ ScheduleExpression: 'at(2026-01-01T12:00:00)', ScheduleExpressionTimezone: 'America/New_York' }),
      ),
    );
    expect(standIn.list()[0]?.nextFireAt).toBe(Date.parse('2026-01-01T17:00:00Z'));
    clock.set(Date.parse('2026-01-01T16:59:59Z'));
    expect(await standIn.fireDue()).toBe(0);
    clock.set(Date.parse('2026-01-01T17:00:00Z'));
    expect(await standIn.fireDue()).toBe(1);
    expect(inputOf(fired[0] as ScheduledFire).at).toBe('2026-01-01T17:00:00Z');
  });

  it('rate(5 minutes): advancing 3 periods at once delivers 3 fires, each with its own scheduled time', async () => {
    await client.send(new CreateScheduleCommand(input()));
    clock.advance(15 * MIN);
    expect(await standIn.fireDue()).toBe(3);
    expect(fired.map((f) => inputOf(f).at)).toEqual([
      '2026-01-01T10:05:00Z',
      '2026-01-01T10:10:00Z',
      '2026-01-01T10:15:00Z',
    ]);
    expect(fired.map((f) => f.scheduledTime)).toEqual([T0 + 5 * MIN, T0 + 10 * MIN, T0 + 15 * MIN]);
    expect(fired.map((f) => inputOf(f).n)).toEqual(['1', '1', '1']);
    expect(new Set(fired.map((f) => inputOf(f).exec)).size).toBe(3);
    clock.advance(4 * MIN);
    expect(await standIn.fireDue()).toBe(0);
    clock.advance(MIN);
    expect(await standIn.fireDue()).toBe(1);
    expect(fired.at(-1)?.scheduledTime).toBe(T0 + 20 * MIN);
  });

  it('rate() is anchored at StartDate and stops before EndDate, then DELETE removes it', async () => {
    await client.send(
      new CreateScheduleCommand(
        input({ StartDate: new Date(T0 + 2 * MIN), EndDate: new Date(T0 + 13 * MIN), ActionAfterCompletion: 'DELETE' }),
      ),
    );
    clock.advance(60 * MIN);
    expect(await standIn.fireDue()).toBe(3);
    expect(fired.map((f) => f.scheduledTime)).toEqual([T0 + 2 * MIN, T0 + 7 * MIN, T0 + 12 * MIN]);
    expect(standIn.list()).toEqual([]);
  });

  it('cron() fires on the wall clock of its zone across a DST change', async () => {
    clock.set(Date.parse('2026-03-27T12:00:00Z'));
    await client.send(
      new CreateScheduleCommand(
        input({ ScheduleExpression: 'cron(30 9 * * ? *)', ScheduleExpressionTimezone: 'Europe/Berlin' }),
      ),
    );
    clock.set(Date.parse('2026-03-30T12:00:00Z'));
    expect(await standIn.fireDue()).toBe(3);
    expect(fired.map((f) => inputOf(f).at)).toEqual([
      '2026-03-28T08:30:00Z',
      '2026-03-29T07:30:00Z',
      '2026-03-30T07:30:00Z',
    ]);
  });

  it('FLEXIBLE windows fire at the start of the window', async () => {
    await client.send(
      new CreateScheduleCommand(
        input({
          ScheduleExpression: 'at(2026-01-01T11:00:00)',
          FlexibleTimeWindow: { Mode: 'FLEXIBLE', MaximumWindowInMinutes: 15 },
        }),
      ),
    );
    clock.set(Date.parse('2026-01-01T11:00:00Z'));
    expect(await standIn.fireDue()).toBe(1);
  });

  it('DISABLED schedules do not fire; enabling them by update does, from then on', async () => {
    await client.send(new CreateScheduleCommand(input({ State: 'DISABLED' })));
    clock.advance(30 * MIN);
    expect(await standIn.fireDue()).toBe(0);
    expect(standIn.list()[0]?.nextFireAt).toBeUndefined();
    await client.send(new UpdateScheduleCommand(input({ State: 'ENABLED' })));
    expect(standIn.list()[0]?.nextFireAt).toBe(T0 + 35 * MIN); // still anchored at creation
    clock.advance(10 * MIN);
    expect(await standIn.fireDue()).toBe(2);
    expect(fired.map((f) => f.scheduledTime)).toEqual([T0 + 35 * MIN, T0 + 40 * MIN]);
  });

  it('UpdateSchedule recomputes the next fire', async () => {
    await client.send(new CreateScheduleCommand(input()));
    clock.advance(2 * MIN);
    await client.send(new UpdateScheduleCommand(input({ ScheduleExpression: 'rate(1 hour)' })));
    expect(standIn.list()[0]?.nextFireAt).toBe(T0 + 60 * MIN);
    clock.advance(57 * MIN);
    expect(await standIn.fireDue()).toBe(0);
    clock.advance(MIN);
    expect(await standIn.fireDue()).toBe(1);

    await client.send(
      new UpdateScheduleCommand(
        input({ ScheduleExpression: 'at(2026-01-02T00:00:00)', ActionAfterCompletion: 'DELETE' }),
      ),
    );
    expect(standIn.list()[0]?.nextFireAt).toBe(Date.parse('2026-01-02T00:00:00Z'));
    clock.set(Date.parse('2026-01-02T00:00:00Z'));
    expect(await standIn.fireDue()).toBe(1);
    expect(standIn.list()).toEqual([]);
  });

  it('retries a failed delivery on later rounds with a new attempt number and execution id', async () => {
    failNext = 2;
    await client.send(new CreateScheduleCommand(input({ ScheduleExpression: 'at(2026-01-01T10:05:00)' })));
    clock.advance(5 * MIN);
    expect(await standIn.fireDue()).toBe(0);
    expect(await standIn.fireDue()).toBe(0);
    expect(await standIn.fireDue()).toBe(1);
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ attempt: 3, scheduledTime: T0 + 5 * MIN });
    expect(inputOf(fired[0] as ScheduledFire)).toMatchObject({ n: '3', at: '2026-01-01T10:05:00Z' });
    expect(await standIn.fireDue()).toBe(0);
  });

  it('drops a fire after MaximumRetryAttempts retries and logs it', async () => {
    failNext = 100;
    await client.send(
      new CreateScheduleCommand(
        input({
          ScheduleExpression: 'at(2026-01-01T10:05:00)',
          ActionAfterCompletion: 'DELETE',
          Target: { Arn: QUEUE_ARN, RoleArn: ROLE_ARN, Input: '{}', RetryPolicy: { MaximumRetryAttempts: 1 } },
        }),
      ),
    );
    clock.advance(5 * MIN);
    await standIn.fireDue(); // attempt 1
    await standIn.fireDue(); // attempt 2 = retry 1, the last
    expect(failNext).toBe(98);
    await standIn.fireDue();
    expect(failNext).toBe(98);
    expect(logs).toEqual([
      expect.stringMatching(
        /dropping the 2026-01-01T10:05:00Z fire of .*job-1: 2 attempt\(s\) failed; last error: Error: target unavailable/,
      ),
    ]);
    expect(standIn.list()).toEqual([]); // completed, so DELETE applies
  });

  it('concurrent fireDue() calls never deliver a fire twice', async () => {
    client.destroy();
    await standIn.stop();
    await start({
      deliver: async (fire) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        fired.push(fire);
      },
    });
    await client.send(new CreateScheduleCommand(input()));
    clock.advance(15 * MIN);
    const counts = await Promise.all([standIn.fireDue(), standIn.fireDue(), standIn.fireDue()]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(3);
    expect(fired.map((f) => f.scheduledTime)).toEqual([T0 + 5 * MIN, T0 + 10 * MIN, T0 + 15 * MIN]);
  });
});

describe('autoFire', () => {
  it('with a ManualClock fires on every change of time', async () => {
    await start({ autoFire: true });
    await client.send(new CreateScheduleCommand(input()));
    clock.advance(10 * MIN);
    await standIn.fireDue(); // waits for the round the clock change started
    expect(fired.map((f) => f.scheduledTime)).toEqual([T0 + 5 * MIN, T0 + 10 * MIN]);
  });

  it('with the system clock polls every pollMs', async () => {
    await start({ clock: systemClock, autoFire: true, pollMs: 10 });
    await client.send(new CreateScheduleCommand(input({ Name: 'soon', StartDate: new Date(Date.now() + 50) })));
    const deadline = Date.now() + 5_000;
    while (fired.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(fired.map((f) => f.name)).toEqual(['soon']);
  });
});

describe('sqsDeliverer into a real SQS emulator (fauxqs)', () => {
  it('sends the filled Input to the queue named by the target ARN, with MessageGroupId for FIFO', async () => {
    const localSqs = await startLocalSqs();
    const sqs = new SQSClient({ region: 'us-east-1', endpoint: localSqs.endpoint, credentials: LOCAL_CREDENTIALS });
    try {
      const { QueueUrl: standardUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'standin-target' }));
      const { QueueUrl: fifoUrl } = await sqs.send(
        new CreateQueueCommand({
          QueueName: 'standin-target.fifo',
          Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' },
        }),
      );
      await start({ deliver: sqsDeliverer(sqs) });
      await client.send(
        new CreateScheduleCommand(
          input({
            Name: 'to-sqs',
            ScheduleExpression: 'at(2026-01-01T10:01:00)',
            Target: {
              Arn: 'arn:aws:sqs:us-east-1:000000000000:standin-target',
              RoleArn: ROLE_ARN,
              Input: PLACEHOLDER_INPUT,
            },
          }),
        ),
      );
      await client.send(
        new CreateScheduleCommand(
          input({
            Name: 'to-fifo',
            ScheduleExpression: 'at(2026-01-01T10:02:00)',
            Target: {
              Arn: 'arn:aws:sqs:us-east-1:000000000000:standin-target.fifo',
              RoleArn: ROLE_ARN,
              Input: '{"k":1}',
              SqsParameters: { MessageGroupId: 'tenant-7' },
            },
          }),
        ),
      );
      clock.advance(5 * MIN);
      expect(await standIn.fireDue()).toBe(2);

      const standard = await sqs.send(new ReceiveMessageCommand({ QueueUrl: standardUrl, WaitTimeSeconds: 1 }));
      expect(standard.Messages).toHaveLength(1);
      expect(JSON.parse(standard.Messages?.[0]?.Body ?? '')).toMatchObject({
        arn: 'arn:aws:scheduler:us-east-1:000000000000:schedule/default/to-sqs',
        at: '2026-01-01T10:01:00Z',
        n: '1',
      });
      const fifo = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: fifoUrl,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ['MessageGroupId'],
        }),
      );
      expect(fifo.Messages?.[0]?.Body).toBe('{"k":1}');
      expect(fifo.Messages?.[0]?.Attributes?.MessageGroupId).toBe('tenant-7');
    } finally {
      sqs.destroy();
      await localSqs.stop();
    }
  });

  it('a target that is not an SQS queue fails delivery (and is retried)', async () => {
    const sqs = new SQSClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: LOCAL_CREDENTIALS });
    await start({ deliver: sqsDeliverer(sqs) });
    await client.send(
      new CreateScheduleCommand(
        input({
          ScheduleExpression: 'at(2026-01-01T10:01:00)',
          Target: {
            Arn: 'arn:aws:lambda:us-east-1:000000000000:function:f',
            RoleArn: ROLE_ARN,
            RetryPolicy: { MaximumRetryAttempts: 0 },
          },
        }),
      ),
    );
    clock.advance(MIN);
    expect(await standIn.fireDue()).toBe(0);
    expect(logs[0]).toMatch(/sqsDeliverer only handles SQS queue targets/);
    sqs.destroy();
  });
});
