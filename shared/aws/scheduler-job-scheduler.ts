import { CreateScheduleCommand, DeleteScheduleCommand, type SchedulerClient } from '@aws-sdk/client-scheduler';
import type { JobMessage } from '../core/job';
import type { JobScheduler } from '../core/ports';
import { awsErrorName, translateAwsError } from './errors';

/** `at()` expression in UTC, whole seconds (Scheduler's format). */
export function atExpression(ms: number): string {
  return `at(${new Date(ms).toISOString().slice(0, 19)})`;
}

/**
 * {@link JobScheduler} on EventBridge Scheduler: one one-time schedule per job, named by the
 * job id in the platform's schedule group, that sends the job message to its ready queue and
 * deletes itself after firing.
 */
export class EventBridgeJobScheduler implements JobScheduler {
  constructor(
    private readonly client: SchedulerClient,
    private readonly groupName: string,
    private readonly roleArn: string,
  ) {}

  async scheduleJob({ jobId, fireAt, queueArn, message }: { jobId: string; fireAt: number; queueArn: string; message: JobMessage }): Promise<void> {
    try {
      await this.client.send(
        new CreateScheduleCommand({
          Name: jobId,
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

  async deleteJobSchedule(jobId: string): Promise<boolean> {
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: jobId, GroupName: this.groupName }));
      return true;
    } catch (error) {
      if (awsErrorName(error) === 'ResourceNotFoundException') return false;
      return translateAwsError(error, 'Scheduler DeleteSchedule');
    }
  }
}
