/**
 * A `deliver` callback for the Scheduler stand-in that does what EventBridge Scheduler's
 * templated SQS target does: SendMessage with the (placeholder-filled) Input as body.
 */
import { GetQueueUrlCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Deliver } from './scheduler-standin-firing';

const SQS_ARN = /^arn:aws[a-z-]*:sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_-]+(?:\.fifo)?)$/;

/** Region, account and queue name of an SQS queue ARN, or `undefined` if `arn` is not one. */
export function parseSqsQueueArn(arn: string): { region: string; accountId: string; queueName: string } | undefined {
  const m = SQS_ARN.exec(arn);
  if (!m?.[1] || !m[2] || !m[3]) return undefined;
  return { region: m[1], accountId: m[2], queueName: m[3] };
}

/**
 * Returns a `deliver` function that sends each fire to the SQS queue named by the target ARN
 * (`arn:aws:sqs:REGION:ACCOUNT:NAME`): it resolves the queue URL once with GetQueueUrl
 * (QueueName + QueueOwnerAWSAccountId) and calls SendMessage with `MessageBody = Input` and the
 * target's `SqsParameters.MessageGroupId` if set. A target without Input sends `{}` (AWS sends a
 * default notification whose shape it does not document). SQS errors propagate, so the
 * stand-in retries per the schedule's RetryPolicy.
 *
 * @example
 * const sqs = new SQSClient({ region: 'us-east-1', endpoint: localSqs.endpoint, credentials });
 * const scheduler = await startSchedulerStandIn({ deliver: sqsDeliverer(sqs) });
 */
export function sqsDeliverer(sqsClient: SQSClient): Deliver {
  const queueUrls = new Map<string, Promise<string>>();
  const queueUrl = (arn: string, queueName: string, accountId: string): Promise<string> => {
    let url = queueUrls.get(arn);
    if (!url) {
      url = sqsClient
        .send(new GetQueueUrlCommand({ QueueName: queueName, QueueOwnerAWSAccountId: accountId }))
        .then((out) => {
          if (!out.QueueUrl) throw new Error(`GetQueueUrl returned no QueueUrl for ${arn}`);
          return out.QueueUrl;
        });
      url.catch(() => queueUrls.delete(arn)); // retry the lookup on the next attempt
      queueUrls.set(arn, url);
    }
    return url;
  };

  return async (fire) => {
    const queue = parseSqsQueueArn(fire.target.Arn);
    if (!queue) {
      throw new Error(
        `sqsDeliverer only handles SQS queue targets (arn:aws:sqs:REGION:ACCOUNT:NAME), not ${fire.target.Arn}`,
      );
    }
    const groupId = fire.target.SqsParameters?.MessageGroupId;
    await sqsClient.send(
      new SendMessageCommand({
        QueueUrl: await queueUrl(fire.target.Arn, queue.queueName, queue.accountId),
        MessageBody: fire.target.Input ?? '{}',
        ...(groupId === undefined ? {} : { MessageGroupId: groupId }),
      }),
    );
  };
}
