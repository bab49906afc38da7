import {
  ChangeMessageVisibilityCommand,
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { JobMessage } from '../core/job';
import { SQS_MAX_DELAY_SECONDS } from '../core/limits';
import { type JobQueue, type QueueEntry, type QueueEntryOutcome, sendBatchGroups } from '../core/ports';
import { DependencyError } from '../errors';
import { translateAwsError } from './errors';

function delayOf(delaySeconds: number | undefined): { DelaySeconds?: number } {
  return delaySeconds ? { DelaySeconds: Math.min(SQS_MAX_DELAY_SECONDS, Math.ceil(delaySeconds)) } : {};
}

/** A message's `MessageGroupId`: on a standard queue, its tenant for SQS fair queues. */
function groupOf(groupId: string | undefined): { MessageGroupId?: string } {
  return groupId === undefined ? {} : { MessageGroupId: groupId };
}

/** The error {@link translateAwsError} makes of `error`, returned instead of thrown. */
function translated(error: unknown, operation: string): Error {
  try {
    translateAwsError(error, operation);
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

/** {@link JobQueue} on SQS. */
export class SqsJobQueue implements JobQueue {
  constructor(private readonly client: SQSClient) {}

  async send(queueUrl: string, message: JobMessage, delaySeconds?: number, groupId?: string): Promise<void> {
    try {
      await this.client.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify(message),
          ...(delaySeconds ? { DelaySeconds: delaySeconds } : {}),
          ...groupOf(groupId),
        }),
      );
    } catch (error) {
      translateAwsError(error, 'SQS SendMessage');
    }
  }

  /**
   * One SendMessageBatch per group of ≤ 10 entries and ≤ 1 MiB, the groups in parallel. SQS can
   * fail single entries of a call that succeeds: those it did not blame on the sender are sent
   * once more in a second call; what still fails is reported for its entry.
   */
  async sendBatch(queueUrl: string, entries: readonly QueueEntry[]): Promise<QueueEntryOutcome[]> {
    const bodies = entries.map((e) => JSON.stringify(e.message));
    const outcomes = new Array<QueueEntryOutcome>(entries.length);
    const sendGroup = async (group: number[], again: boolean): Promise<void> => {
      const request: SendMessageBatchRequestEntry[] = group.map((i) => ({
        Id: `m${i}`,
        MessageBody: bodies[i] ?? '',
        ...delayOf(entries[i]?.delaySeconds),
        ...groupOf(entries[i]?.groupId),
      }));
      let out: SendMessageBatchCommandOutput;
      try {
        out = await this.client.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: request }));
      } catch (error) {
        const failure = translated(error, 'SQS SendMessageBatch');
        for (const i of group) outcomes[i] = { sent: false, error: failure };
        return;
      }
      const index = (id: string | undefined) => Number((id ?? '').slice(1));
      for (const entry of out.Successful ?? []) outcomes[index(entry.Id)] = { sent: true };
      const retry: number[] = [];
      for (const entry of out.Failed ?? []) {
        const i = index(entry.Id);
        if (!again && !entry.SenderFault) {
          retry.push(i);
          continue;
        }
        outcomes[i] = {
          sent: false,
          error: new DependencyError(
            `SQS SendMessageBatch refused the message of job ${entries[i]?.message.id}: ${entry.Code ?? 'error'}: ${entry.Message ?? ''}`,
          ),
        };
      }
      if (retry.length > 0) await sendGroup(retry, true);
    };
    await Promise.all(sendBatchGroups(bodies).map((group) => sendGroup(group, false)));
    // An entry SQS answered for neither way (never seen from SQS) is reported, never assumed sent.
    for (let i = 0; i < entries.length; i++) {
      outcomes[i] ??= {
        sent: false,
        error: new DependencyError(`SQS SendMessageBatch did not report the message of job ${entries[i]?.message.id}`),
      };
    }
    return outcomes;
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
