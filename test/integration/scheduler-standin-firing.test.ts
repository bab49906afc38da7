import { CreateScheduleCommand, GetScheduleCommand, UpdateScheduleCommand } from '@aws-sdk/client-scheduler';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../shared/core/clock';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { sqsDeliverer } from '../local-aws/scheduler-standin';
import { startLocalSqs } from '../local-aws/sqs';
import {
  input,
  inputOf,
  MIN,
  PLACEHOLDER_INPUT,
  QUEUE_ARN,
  ROLE_ARN,
  rejection,
  T0,
  useStandIn,
} from './scheduler-standin-fixture';

/** The stand-in firing schedules on a ManualClock through a recording `deliver`, and into fauxqs. */
const h = useStandIn();

describe('firing on a ManualClock', () => {
  beforeEach(() => h.start());

  it('at() fires once with filled placeholders, then ActionAfterCompletion DELETE deletes it', async () => {
    await h.client.send(
      new CreateScheduleCommand(
        input({ ScheduleExpression: 'at(2026-01-01T10:30:00)', ActionAfterCompletion: 'DELETE' }),
      ),
    );
    expect(h.standIn.list()[0]?.nextFireAt).toBe(T0 + 30 * MIN);
    h.clock.advance(30 * MIN - 1);
    expect(await h.standIn.fireDue()).toBe(0);
    h.clock.advance(1);
    expect(await h.standIn.fireDue()).toBe(1);
    const [fire] = h.fired;
    const arn = 'arn:aws:scheduler:us-east-1:000000000000:schedule/default/job-1';
    expect(fire).toMatchObject({
      scheduleArn: arn,
      name: 'job-1',
      group: 'default',
      scheduledTime: T0 + 30 * MIN,
      attempt: 1,
    });
    expect(fire?.target).toMatchObject({ Arn: QUEUE_ARN, RoleArn: ROLE_ARN });
    expect(inputOf(h.fired[0])).toEqual({
      arn,
      at: '2026-01-01T10:30:00Z',
      exec: fire?.executionId,
      n: '1',
    });
    expect(fire?.executionId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await rejection(h.client.send(new GetScheduleCommand({ Name: 'job-1' })))).name).toBe(
      'ResourceNotFoundException',
    );
    h.clock.advance(24 * 60 * MIN);
    expect(await h.standIn.fireDue()).toBe(0);
    expect(h.fired).toHaveLength(1);
  });

  it('at() with ActionAfterCompletion NONE stays, with no next fire', async () => {
    await h.client.send(new CreateScheduleCommand(input({ ScheduleExpression: 'at(2026-01-01T10:30:00)' })));
    h.clock.advance(60 * MIN);
    expect(await h.standIn.fireDue()).toBe(1);
    expect(await h.standIn.fireDue()).toBe(0);
    expect((await h.client.send(new GetScheduleCommand({ Name: 'job-1' }))).State).toBe('ENABLED');
    expect(h.standIn.list()[0]?.nextFireAt).toBeUndefined();
  });

  it('an at() time already past at creation never fires, and the stand-in says so', async () => {
    await h.client.send(new CreateScheduleCommand(input({ ScheduleExpression: 'at(2026-01-01T09:59:59)' })));
    expect(h.logs).toEqual([expect.stringMatching(/job-1: at\(2026-01-01T09:59:59\) \(UTC\) is already past/)]);
    h.clock.advance(60 * MIN);
    expect(await h.standIn.fireDue()).toBe(0);
  });

  it('at() is wall time in ScheduleExpressionTimezone', async () => {
    await h.client.send(
      new CreateScheduleCommand(
        input({ ScheduleExpression: 'at(2026-01-01T12:00:00)', ScheduleExpressionTimezone: 'America/New_York' }),
      ),
    );
    expect(h.standIn.list()[0]?.nextFireAt).toBe(Date.parse('2026-01-01T17:00:00Z'));
    h.clock.set(Date.parse('2026-01-01T16:59:59Z'));
    expect(await h.standIn.fireDue()).toBe(0);
    h.clock.set(Date.parse('2026-01-01T17:00:00Z'));
    expect(await h.standIn.fireDue()).toBe(1);
    expect(inputOf(h.fired[0]).at).toBe('2026-01-01T17:00:00Z');
  });

  it('rate(5 minutes): advancing 3 periods at once delivers 3 fires, each with its own scheduled time', async () => {
    await h.client.send(new CreateScheduleCommand(input()));
    h.clock.advance(15 * MIN);
    expect(await h.standIn.fireDue()).toBe(3);
    expect(h.fired.map((f) => inputOf(f).at)).toEqual([
      '2026-01-01T10:05:00Z',
      '2026-01-01T10:10:00Z',
      '2026-01-01T10:15:00Z',
    ]);
    expect(h.fired.map((f) => f.scheduledTime)).toEqual([T0 + 5 * MIN, T0 + 10 * MIN, T0 + 15 * MIN]);
    expect(h.fired.map((f) => inputOf(f).n)).toEqual(['1', '1', '1']);
    expect(new Set(h.fired.map((f) => inputOf(f).exec)).size).toBe(3);
    h.clock.advance(4 * MIN);
    expect(await h.standIn.fireDue()).toBe(0);
    h.clock.advance(MIN);
    expect(await h.standIn.fireDue()).toBe(1);
    expect(h.fired.at(-1)?.scheduledTime).toBe(T0 + 20 * MIN);
  });

  it('rate() is anchored at StartDate and stops before EndDate, then DELETE removes it', async () => {
    await h.client.send(
      new CreateScheduleCommand(
        input({ StartDate: new Date(T0 + 2 * MIN), EndDate: new Date(T0 + 13 * MIN), ActionAfterCompletion: 'DELETE' }),
      ),
    );
    h.clock.advance(60 * MIN);
    expect(await h.standIn.fireDue()).toBe(3);
    expect(h.fired.map((f) => f.scheduledTime)).toEqual([T0 + 2 * MIN, T0 + 7 * MIN, T0 + 12 * MIN]);
    expect(h.standIn.list()).toEqual([]);
  });

  it('cron() fires on the wall clock of its zone across a DST change', async () => {
    h.clock.set(Date.parse('2026-03-27T12:00:00Z'));
    await h.client.send(
      new CreateScheduleCommand(
        input({ ScheduleExpression: 'cron(30 9 * * ? *)', ScheduleExpressionTimezone: 'Europe/Berlin' }),
      ),
    );
    h.clock.set(Date.parse('2026-03-30T12:00:00Z'));
    expect(await h.standIn.fireDue()).toBe(3);
    expect(h.fired.map((f) => inputOf(f).at)).toEqual([
      '2026-03-28T08:30:00Z',
      '2026-03-29T07:30:00Z',
      '2026-03-30T07:30:00Z',
    ]);
  });

  it('FLEXIBLE windows fire at the start of the window', async () => {
    await h.client.send(
      new CreateScheduleCommand(
        input({
          ScheduleExpression: 'at(2026-01-01T11:00:00)',
          FlexibleTimeWindow: { Mode: 'FLEXIBLE', MaximumWindowInMinutes: 15 },
        }),
      ),
    );
    h.clock.set(Date.parse('2026-01-01T11:00:00Z'));
    expect(await h.standIn.fireDue()).toBe(1);
  });

  it('DISABLED schedules do not fire; enabling them by update does, from then on', async () => {
    await h.client.send(new CreateScheduleCommand(input({ State: 'DISABLED' })));
    h.clock.advance(30 * MIN);
    expect(await h.standIn.fireDue()).toBe(0);
    expect(h.standIn.list()[0]?.nextFireAt).toBeUndefined();
    await h.client.send(new UpdateScheduleCommand(input({ State: 'ENABLED' })));
    expect(h.standIn.list()[0]?.nextFireAt).toBe(T0 + 35 * MIN); // still anchored at creation
    h.clock.advance(10 * MIN);
    expect(await h.standIn.fireDue()).toBe(2);
    expect(h.fired.map((f) => f.scheduledTime)).toEqual([T0 + 35 * MIN, T0 + 40 * MIN]);
  });

  it('UpdateSchedule recomputes the next fire', async () => {
    await h.client.send(new CreateScheduleCommand(input()));
    h.clock.advance(2 * MIN);
    await h.client.send(new UpdateScheduleCommand(input({ ScheduleExpression: 'rate(1 hour)' })));
    expect(h.standIn.list()[0]?.nextFireAt).toBe(T0 + 60 * MIN);
    h.clock.advance(57 * MIN);
    expect(await h.standIn.fireDue()).toBe(0);
    h.clock.advance(MIN);
    expect(await h.standIn.fireDue()).toBe(1);

    await h.client.send(
      new UpdateScheduleCommand(
        input({ ScheduleExpression: 'at(2026-01-02T00:00:00)', ActionAfterCompletion: 'DELETE' }),
      ),
    );
    expect(h.standIn.list()[0]?.nextFireAt).toBe(Date.parse('2026-01-02T00:00:00Z'));
    h.clock.set(Date.parse('2026-01-02T00:00:00Z'));
    expect(await h.standIn.fireDue()).toBe(1);
    expect(h.standIn.list()).toEqual([]);
  });

  it('retries a failed delivery on later rounds with a new attempt number and execution id', async () => {
    h.failNext = 2;
    await h.client.send(new CreateScheduleCommand(input({ ScheduleExpression: 'at(2026-01-01T10:05:00)' })));
    h.clock.advance(5 * MIN);
    expect(await h.standIn.fireDue()).toBe(0);
    expect(await h.standIn.fireDue()).toBe(0);
    expect(await h.standIn.fireDue()).toBe(1);
    expect(h.fired).toHaveLength(1);
    expect(h.fired[0]).toMatchObject({ attempt: 3, scheduledTime: T0 + 5 * MIN });
    expect(inputOf(h.fired[0])).toMatchObject({ n: '3', at: '2026-01-01T10:05:00Z' });
    expect(await h.standIn.fireDue()).toBe(0);
  });

  it('drops a fire after MaximumRetryAttempts retries and logs it', async () => {
    h.failNext = 100;
    await h.client.send(
      new CreateScheduleCommand(
        input({
          ScheduleExpression: 'at(2026-01-01T10:05:00)',
          ActionAfterCompletion: 'DELETE',
          Target: { Arn: QUEUE_ARN, RoleArn: ROLE_ARN, Input: '{}', RetryPolicy: { MaximumRetryAttempts: 1 } },
        }),
      ),
    );
    h.clock.advance(5 * MIN);
    await h.standIn.fireDue(); // attempt 1
    await h.standIn.fireDue(); // attempt 2 = retry 1, the last
    expect(h.failNext).toBe(98);
    await h.standIn.fireDue();
    expect(h.failNext).toBe(98);
    expect(h.logs).toEqual([
      expect.stringMatching(
        /dropping the 2026-01-01T10:05:00Z fire of .*job-1: 2 attempt\(s\) failed; last error: Error: target unavailable/,
      ),
    ]);
    expect(h.standIn.list()).toEqual([]); // completed, so DELETE applies
  });

  it('concurrent fireDue() calls never deliver a fire twice', async () => {
    await h.stop();
    await h.start({
      deliver: async (fire) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        h.fired.push(fire);
      },
    });
    await h.client.send(new CreateScheduleCommand(input()));
    h.clock.advance(15 * MIN);
    const counts = await Promise.all([h.standIn.fireDue(), h.standIn.fireDue(), h.standIn.fireDue()]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(3);
    expect(h.fired.map((f) => f.scheduledTime)).toEqual([T0 + 5 * MIN, T0 + 10 * MIN, T0 + 15 * MIN]);
  });
});

describe('autoFire', () => {
  it('with a ManualClock fires on every change of time', async () => {
    await h.start({ autoFire: true });
    await h.client.send(new CreateScheduleCommand(input()));
    h.clock.advance(10 * MIN);
    await h.standIn.fireDue(); // waits for the round the clock change started
    expect(h.fired.map((f) => f.scheduledTime)).toEqual([T0 + 5 * MIN, T0 + 10 * MIN]);
  });

  it('with the system clock polls every pollMs', async () => {
    await h.start({ clock: systemClock, autoFire: true, pollMs: 10 });
    await h.client.send(new CreateScheduleCommand(input({ Name: 'soon', StartDate: new Date(Date.now() + 50) })));
    const deadline = Date.now() + 5_000;
    while (h.fired.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(h.fired.map((f) => f.name)).toEqual(['soon']);
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
      await h.start({ deliver: sqsDeliverer(sqs) });
      await h.client.send(
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
      await h.client.send(
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
      h.clock.advance(5 * MIN);
      expect(await h.standIn.fireDue()).toBe(2);

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
    await h.start({ deliver: sqsDeliverer(sqs) });
    await h.client.send(
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
    h.clock.advance(MIN);
    expect(await h.standIn.fireDue()).toBe(0);
    expect(h.logs[0]).toMatch(/sqsDeliverer only handles SQS queue targets/);
    sqs.destroy();
  });
});
