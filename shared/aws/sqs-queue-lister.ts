import { ListQueuesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { typeOfReadyQueue } from '../core/queue-settings';
import { translateAwsError } from './errors';

/**
 * The job types whose ready queue exists under `prefix`: one ListQueues per 1,000 queues
 * (`QueueNamePrefix` `<prefix>_ready_`). ListQueues takes no resource-level permission (IAM
 * grants it per Region), and it is eventually consistent: a queue created a moment ago may be
 * missing from it.
 *
 * @example
 * const types = await listDeployedTypes(sqs, 'Orrery'); // ['echo', 'send-email']
 */
export async function listDeployedTypes(client: SQSClient, prefix: string): Promise<string[]> {
  const types: string[] = [];
  let token: string | undefined;
  do {
    try {
      const page = await client.send(
        new ListQueuesCommand({
          QueueNamePrefix: `${prefix}_ready_`,
          MaxResults: 1000,
          ...(token ? { NextToken: token } : {}),
        }),
      );
      for (const url of page.QueueUrls ?? []) {
        const type = typeOfReadyQueue(prefix, url);
        if (type) types.push(type);
      }
      token = page.NextToken;
    } catch (error) {
      translateAwsError(error, 'SQS ListQueues');
    }
  } while (token);
  return [...new Set(types)].sort();
}
