/**
 * The local deploy harness on moto, whose Scheduler answers CreateScheduleGroup of an existing
 * group by replacing it (its schedules silently gone) and DeleteScheduleGroup of a missing group
 * with an HTML 500: deploying again keeps the group's schedules, and destroying twice is fine.
 */
import { CreateScheduleCommand, GetScheduleGroupCommand, ListSchedulesCommand } from '@aws-sdk/client-scheduler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployLocal, destroyLocal, type LocalAws, localClients, startLocalAws } from '../local-aws/index';
import { uniquePrefix } from '../local-aws/namespace';

let aws: LocalAws;

beforeAll(async () => {
  aws = await startLocalAws({ target: 'moto' });
});

afterAll(async () => {
  await aws?.stop();
});

describe('deployLocal / destroyLocal on moto', () => {
  it('a second deploy keeps the schedules of the group; a second destroy is a no-op', async () => {
    const options = { prefix: uniquePrefix('moto-deploy'), jobTypes: [{ type: 'echo', timeoutMs: 5_000 }] };
    const deployment = await deployLocal(aws, options);
    const clients = localClients(aws);
    try {
      const group = deployment.config.scheduleGroup;
      const queue = deployment.queues.echo;
      if (!queue) throw new Error('no echo queue');
      await clients.scheduler.send(
        new CreateScheduleCommand({
          Name: 'kept',
          GroupName: group,
          ScheduleExpression: 'at(2099-01-01T00:00:00)',
          FlexibleTimeWindow: { Mode: 'OFF' },
          Target: { Arn: queue.arn, RoleArn: deployment.config.schedulerRoleArn, Input: '{}' },
        }),
      );
      const names = async () =>
        ((await clients.scheduler.send(new ListSchedulesCommand({ GroupName: group }))).Schedules ?? []).map(
          (s) => s.Name,
        );
      expect(await names()).toEqual(['kept']);

      await deployLocal(aws, options); // as a stack update: nothing is re-created
      expect(await names()).toEqual(['kept']);

      await destroyLocal(aws, deployment);
      await expect(clients.scheduler.send(new GetScheduleGroupCommand({ Name: group }))).rejects.toMatchObject({
        name: 'ResourceNotFoundException',
      });
      await destroyLocal(aws, deployment); // everything already gone
    } finally {
      clients.destroy();
    }
  });
});
