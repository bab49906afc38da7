import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { JobMessage } from '../core/job';
import type { JobQueue } from '../core/ports';
import { translateAwsError } from './errors';

/** {@link JobQueue} on SQS. */
export class SqsJobQueue implements JobQueue {
  constructor(private readonly client: SQSClient) {}

  async send(queueUrl: string, message: JobMessage, delaySeconds?: number): Promise<void> {
    try {
      await this.client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify(message),
          ...(delaySeconds ? { DelaySeconds: delaySeconds } : {}),
        }),
      );
    } catch (error) {
      translateAwsError(error, 'SQS SendMessage');
    }
  }

  async changeVisibility(queueUrl: string, receiptHandle: string, seconds: number): Promise<void> {
    try {
      await this.client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: Math.max(0, Math.min(43_200, Math.ceil(seconds))),
        }),
      );
    } catch (error) {
      translateAwsError(error, 'SQS ChangeMessageVisibility');
    }
  }
}
