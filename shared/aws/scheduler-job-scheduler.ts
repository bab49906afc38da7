import { CreateScheduleCommand, DeleteScheduleCommand, type SchedulerClient } from '@aws-sdk/client-scheduler';
import type { JobMessage } from '../core/job';
import type { JobScheduler } from '../core/ports';
import { awsErrorName, translateAwsError } from './errors';

/** `at()` expression in UTC, whole seconds (Scheduler's format). */
export function atExpression(ms: number): string {
  return `at(${new Date(ms).toISOString().slice(0, 19)})`;
}

/**
 * {@link JobScheduler} on EventBridge Scheduler: one-time schedules in the platform's schedule
 * group that send a job message to its ready queue and delete themselves after firing.
 */
export class EventBridgeJobScheduler implements JobScheduler {
  constructor(
    private readonly client: SchedulerClient,
    private readonly groupName: string,
    private readonly roleArn: string,
  ) {}

  async scheduleJob({
    name,
    fireAt,
    queueArn,
    message,
  }: {
    name: string;
    fireAt: number;
    queueArn: string;
    message: JobMessage;
  }): Promise<void> {
    try {
      await this.client.send(
        new CreateScheduleCommand({
          Name: name,
          GroupName: this.groupName,
          ScheduleExpression: atExpression(fireAt),
          ScheduleExpressionTimezone: 'UTC',
          FlexibleTimeWindow: { Mode: 'OFF' },
          ActionAfterCompletion: 'DELETE',
          Target: {
            Arn: queueArn,
            RoleArn: this.roleArn,
            Input: JSON.stringify(message),
            RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86_400 },
          },
        }),
      );
    } catch (error) {
      if (awsErrorName(error) === 'ConflictException') return; // already scheduled: idempotent
      translateAwsError(error, 'Scheduler CreateSchedule');
    }
  }

  async deleteJobSchedule(name: string): Promise<boolean> {
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: name, GroupName: this.groupName }));
      return true;
    } catch (error) {
      if (awsErrorName(error) === 'ResourceNotFoundException') return false;
      return translateAwsError(error, 'Scheduler DeleteSchedule');
    }
  }
}
