/** Reading queues in tests and chaos runs. */
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';

/**
 * Messages in the given queues, visible, in flight and delayed alike (approximate counts, as SQS
 * reports them).
 *
 * @example
 * if ((await messagesIn(sqs, [readyUrl, dlqUrl])) === 0) console.log('drained');
 */
export async function messagesIn(sqs: SQSClient, urls: readonly string[]): Promise<number> {
  let total = 0;
  for (const url of urls) {
    const out = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    const a = out.Attributes ?? {};
    total +=
      Number(a.ApproximateNumberOfMessages ?? 0) +
      Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) +
      Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
  }
  return total;
}
