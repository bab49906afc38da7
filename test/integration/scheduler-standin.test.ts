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
import { beforeEach, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { input, MIN, QUEUE_ARN, ROLE_ARN, rejection, T0, useStandIn } from './scheduler-standin-fixture';

/** The stand-in's API routes, driven by the real @aws-sdk/client-scheduler. Firing: scheduler-standin-firing.test.ts. */
const h = useStandIn();

describe('wire protocol with the real SchedulerClient', () => {
  beforeEach(() => h.start());

  it('CreateSchedule returns the ARN and GetSchedule the whole schedule', async () => {
    const created = await h.client.send(
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

    const got = await h.client.send(new GetScheduleCommand({ Name: 'job-1' }));
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
    const res = await fetch(`${h.standIn.endpoint}/schedules/nope?groupName=default`);
    expect(res.status).toBe(404);
    expect(res.headers.get('x-amzn-errortype')).toBe('ResourceNotFoundException');
    expect(await res.json()).toEqual({ Message: 'Schedule nope does not exist.' });

    const unknown = await fetch(`${h.standIn.endpoint}/tags/arn:x`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('x-amzn-errortype')).toBe('UnknownOperationException');

    const badJson = await fetch(`${h.standIn.endpoint}/schedules/x`, {
      method: 'POST',
      body: '{nope',
      headers: { 'content-type': 'application/json' },
    });
    expect(badJson.status).toBe(400);
    expect(badJson.headers.get('x-amzn-errortype')).toBe('ValidationException');
  });

  it('creating an existing name is a ConflictException; a retry with the same ClientToken is not', async () => {
    await h.client.send(new CreateScheduleCommand(input({ ClientToken: 'token-1' })));
    const again = await h.client.send(new CreateScheduleCommand(input({ ClientToken: 'token-1' })));
    expect(again.ScheduleArn).toBe('arn:aws:scheduler:us-east-1:000000000000:schedule/default/job-1');

    const err = await rejection(h.client.send(new CreateScheduleCommand(input())));
    expect(err).toBeInstanceOf(ConflictException);
    expect(err.name).toBe('ConflictException');
    expect(err.$metadata?.httpStatusCode).toBe(409);
    expect(err.message).toBe('Schedule job-1 already exists.');
  });

  it('unknown schedules and groups are ResourceNotFoundException', async () => {
    const missing = await rejection(h.client.send(new GetScheduleCommand({ Name: 'nope' })));
    expect(missing).toBeInstanceOf(ResourceNotFoundException);
    expect(missing.name).toBe('ResourceNotFoundException');
    expect(missing.$metadata?.httpStatusCode).toBe(404);
    expect(missing.message).toBe('Schedule nope does not exist.');

    const noGroup = await rejection(h.client.send(new CreateScheduleCommand(input({ GroupName: 'ghosts' }))));
    expect(noGroup.name).toBe('ResourceNotFoundException');
    expect(noGroup.message).toBe('Schedule group ghosts does not exist.');

    expect((await rejection(h.client.send(new UpdateScheduleCommand(input({ Name: 'nope' }))))).name).toBe(
      'ResourceNotFoundException',
    );
    expect((await rejection(h.client.send(new DeleteScheduleCommand({ Name: 'nope' })))).name).toBe(
      'ResourceNotFoundException',
    );
    expect((await rejection(h.client.send(new ListSchedulesCommand({ GroupName: 'ghosts' })))).name).toBe(
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
    const err = await rejection(h.client.send(new CreateScheduleCommand(input(overrides))));
    expect(err).toBeInstanceOf(ValidationException);
    expect(err.name).toBe('ValidationException');
    expect(err.$metadata?.httpStatusCode).toBe(400);
    expect(err.message).toMatch(message);
    expect(h.standIn.list()).toEqual([]);
  });

  it('reports several constraint violations at once', async () => {
    const err = await rejection(
      h.client.send(new CreateScheduleCommand(input({ FlexibleTimeWindow: undefined, Target: undefined }))),
    );
    expect(err.message).toMatch(/^2 validation errors detected: /);
  });

  it('UpdateSchedule replaces the whole schedule and keeps CreationDate', async () => {
    await h.client.send(
      new CreateScheduleCommand(input({ Description: 'first', ScheduleExpressionTimezone: 'Europe/Berlin' })),
    );
    h.clock.advance(MIN);
    const updated = await h.client.send(
      new UpdateScheduleCommand(input({ ScheduleExpression: 'cron(0 9 ? * MON-FRI *)', State: 'DISABLED' })),
    );
    expect(updated.ScheduleArn).toBe('arn:aws:scheduler:us-east-1:000000000000:schedule/default/job-1');
    const got = await h.client.send(new GetScheduleCommand({ Name: 'job-1' }));
    expect(got.ScheduleExpression).toBe('cron(0 9 ? * MON-FRI *)');
    expect(got.State).toBe('DISABLED');
    expect(got.Description).toBeUndefined(); // omitted in the update → cleared, as AWS documents
    expect(got.ScheduleExpressionTimezone).toBe('UTC');
    expect(got.CreationDate).toEqual(new Date(T0));
    expect(got.LastModificationDate).toEqual(new Date(T0 + MIN));
  });

  it('DeleteSchedule deletes (with and without groupName)', async () => {
    await h.client.send(new CreateScheduleGroupCommand({ Name: 'jobs' }));
    await h.client.send(new CreateScheduleCommand(input({ GroupName: 'jobs' })));
    await h.client.send(new CreateScheduleCommand(input()));
    await h.client.send(new DeleteScheduleCommand({ Name: 'job-1', GroupName: 'jobs' }));
    expect(h.standIn.list().map((s) => `${s.GroupName}/${s.Name}`)).toEqual(['default/job-1']);
    await h.client.send(new DeleteScheduleCommand({ Name: 'job-1' }));
    expect(h.standIn.list()).toEqual([]);
    expect((await rejection(h.client.send(new GetScheduleCommand({ Name: 'job-1', GroupName: 'jobs' })))).name).toBe(
      'ResourceNotFoundException',
    );
  });

  it('ListSchedules filters by group, prefix and state, and paginates', async () => {
    await h.client.send(new CreateScheduleGroupCommand({ Name: 'jobs' }));
    for (const name of ['a-1', 'a-2', 'a-3', 'b-1'])
      await h.client.send(new CreateScheduleCommand(input({ Name: name, GroupName: 'jobs' })));
    await h.client.send(new CreateScheduleCommand(input({ Name: 'a-4', State: 'DISABLED' })));

    const all = await h.client.send(new ListSchedulesCommand({}));
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

    const filtered = await h.client.send(new ListSchedulesCommand({ GroupName: 'jobs', NamePrefix: 'a-' }));
    expect(filtered.Schedules?.map((s) => s.Name)).toEqual(['a-1', 'a-2', 'a-3']);
    const disabled = await h.client.send(new ListSchedulesCommand({ State: 'DISABLED' }));
    expect(disabled.Schedules?.map((s) => s.Name)).toEqual(['a-4']);

    const page1 = await h.client.send(new ListSchedulesCommand({ GroupName: 'jobs', MaxResults: 3 }));
    expect(page1.Schedules?.map((s) => s.Name)).toEqual(['a-1', 'a-2', 'a-3']);
    expect(page1.NextToken).toBeTypeOf('string');
    const page2 = await h.client.send(
      new ListSchedulesCommand({ GroupName: 'jobs', MaxResults: 3, NextToken: page1.NextToken }),
    );
    expect(page2.Schedules?.map((s) => s.Name)).toEqual(['b-1']);
    expect(page2.NextToken).toBeUndefined();

    const names: string[] = [];
    for await (const page of paginateListSchedules({ client: h.client, pageSize: 2 }, {}))
      names.push(...(page.Schedules ?? []).map((s) => s.Name ?? ''));
    expect(names).toEqual(['a-4', 'a-1', 'a-2', 'a-3', 'b-1']);

    expect((await rejection(h.client.send(new ListSchedulesCommand({ NextToken: 'garbage' })))).name).toBe(
      'ValidationException',
    );
    expect((await rejection(h.client.send(new ListSchedulesCommand({ MaxResults: 101 })))).message).toMatch(
      /less than or equal to 100/,
    );
  });

  it('schedule groups: create, get, list, conflict, and delete with their schedules', async () => {
    const created = await h.client.send(
      new CreateScheduleGroupCommand({ Name: 'jobs', Tags: [{ Key: 'app', Value: 'orrery' }] }),
    );
    expect(created.ScheduleGroupArn).toBe('arn:aws:scheduler:us-east-1:000000000000:schedule-group/jobs');
    expect((await rejection(h.client.send(new CreateScheduleGroupCommand({ Name: 'jobs' })))).name).toBe(
      'ConflictException',
    );

    const got = await h.client.send(new GetScheduleGroupCommand({ Name: 'jobs' }));
    expect(got).toMatchObject({
      Arn: created.ScheduleGroupArn,
      Name: 'jobs',
      State: 'ACTIVE',
      CreationDate: new Date(T0),
    });
    const groups = await h.client.send(new ListScheduleGroupsCommand({}));
    expect(groups.ScheduleGroups?.map((g) => g.Name)).toEqual(['default', 'jobs']);
    expect(
      (await h.client.send(new ListScheduleGroupsCommand({ NamePrefix: 'jo' }))).ScheduleGroups?.map((g) => g.Name),
    ).toEqual(['jobs']);

    await h.client.send(new CreateScheduleCommand(input({ GroupName: 'jobs' })));
    await h.client.send(new CreateScheduleCommand(input({ Name: 'keep' })));
    await h.client.send(new DeleteScheduleGroupCommand({ Name: 'jobs' }));
    expect(h.standIn.list().map((s) => s.Name)).toEqual(['keep']);
    expect((await rejection(h.client.send(new GetScheduleGroupCommand({ Name: 'jobs' })))).name).toBe(
      'ResourceNotFoundException',
    );
    expect((await rejection(h.client.send(new DeleteScheduleGroupCommand({ Name: 'jobs' })))).name).toBe(
      'ResourceNotFoundException',
    );

    const deleteDefault = await rejection(h.client.send(new DeleteScheduleGroupCommand({ Name: 'default' })));
    expect(deleteDefault.name).toBe('ValidationException');
    expect((await h.client.send(new GetScheduleGroupCommand({ Name: 'default' }))).Arn).toBe(
      'arn:aws:scheduler:us-east-1:000000000000:schedule-group/default',
    );
  });

  it('is reached through AWS_ENDPOINT_URL_SCHEDULER', async () => {
    const previous = process.env.AWS_ENDPOINT_URL_SCHEDULER;
    process.env.AWS_ENDPOINT_URL_SCHEDULER = h.standIn.endpoint;
    const envClient = new SchedulerClient({ region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    try {
      await envClient.send(new CreateScheduleCommand(input({ Name: 'via-env' })));
      expect(h.standIn.list().map((s) => s.Name)).toEqual(['via-env']);
    } finally {
      envClient.destroy();
      if (previous === undefined) delete process.env.AWS_ENDPOINT_URL_SCHEDULER;
      else process.env.AWS_ENDPOINT_URL_SCHEDULER = previous;
    }
  });

  it('deleteDirectly removes a schedule behind the API', async () => {
    await h.client.send(new CreateScheduleCommand(input()));
    expect(h.standIn.deleteDirectly('job-1')).toBe(true);
    expect(h.standIn.deleteDirectly('job-1')).toBe(false);
    expect((await rejection(h.client.send(new GetScheduleCommand({ Name: 'job-1' })))).name).toBe(
      'ResourceNotFoundException',
    );
  });
});
