import {
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  DeleteScheduleCommand,
  type SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { fireMessageTemplate } from '../core/fire-message';
import { triggerName } from '../schedules/model';
import type { RecurringTrigger, TriggerDefinition } from '../schedules/ports';
import { awsErrorName, translateAwsError } from './errors';

/**
 * {@link RecurringTrigger} on EventBridge Scheduler: one recurring schedule per Orrery schedule,
 * named `_s.<name>` ({@link triggerName}) in the platform's schedule group, whose templated SQS
 * target sends the fire message (`fireMessageTemplate`, with `<aws.scheduler.scheduled-time>`)
 * to the job type's ready queue.
 */
export class EventBridgeRecurringTrigger implements RecurringTrigger {
  constructor(
    private readonly client: SchedulerClient,
    private readonly groupName: string,
    private readonly roleArn: string,
  ) {}

  private input(definition: TriggerDefinition): CreateScheduleCommandInput {
    return {
      Name: triggerName(definition.name),
      GroupName: this.groupName,
      Description: `Orrery schedule ${definition.name} (job type ${definition.type})`,
      ScheduleExpression: definition.expression,
      ScheduleExpressionTimezone: definition.timezone,
      ...(definition.startDate !== undefined ? { StartDate: new Date(definition.startDate) } : {}),
      ...(definition.endDate !== undefined ? { EndDate: new Date(definition.endDate) } : {}),
      State: definition.enabled ? 'ENABLED' : 'DISABLED',
      FlexibleTimeWindow: { Mode: 'OFF' },
      ActionAfterCompletion: 'NONE',
      Target: {
        Arn: definition.queueArn,
        RoleArn: this.roleArn,
        Input: fireMessageTemplate(definition.name, definition.type),
        RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86_400 },
      },
    };
  }

  async put(definition: TriggerDefinition): Promise<void> {
    const input = this.input(definition);
    try {
      await this.client.send(new UpdateScheduleCommand(input));
      return;
    } catch (error) {
      if (awsErrorName(error) !== 'ResourceNotFoundException') translateAwsError(error, 'Scheduler UpdateSchedule');
    }
    try {
      await this.client.send(new CreateScheduleCommand(input));
    } catch (error) {
      if (awsErrorName(error) !== 'ConflictException') translateAwsError(error, 'Scheduler CreateSchedule');
      // Created concurrently: make it match this definition.
      await this.client.send(new UpdateScheduleCommand(input)).catch((again: unknown) => {
        translateAwsError(again, 'Scheduler UpdateSchedule');
      });
    }
  }

  async delete(name: string): Promise<boolean> {
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: triggerName(name), GroupName: this.groupName }));
      return true;
    } catch (error) {
      if (awsErrorName(error) === 'ResourceNotFoundException') return false;
      return translateAwsError(error, 'Scheduler DeleteSchedule');
    }
  }
}
