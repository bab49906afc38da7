import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from 'aws-lambda';

/**
 * Turns SQS ReceiveMessage output into the `SQSEvent` Lambda's event source mapping delivers
 * (field names, string attributes, base64 binary attributes, empty list values included).
 *
 * @example
 * const event = toSqsEvent(received.Messages ?? [], queueArn);
 */
export function toSqsEvent(messages: Message[], queueArn: string): SQSEvent {
  const awsRegion = queueArn.split(':')[3] ?? 'us-east-1';
  return { Records: messages.map((message) => toRecord(message, queueArn, awsRegion)) };
}

function toRecord(message: Message, eventSourceARN: string, awsRegion: string): SQSRecord {
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = {
      ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { binaryValue: Buffer.from(value.BinaryValue).toString('base64') } : {}),
      stringListValues: value.StringListValues ?? [],
      binaryListValues: (value.BinaryListValues ?? []).map((b) => Buffer.from(b).toString('base64')),
      dataType: value.DataType ?? 'String',
    };
  }
  const attributes = { ...(message.Attributes ?? {}) } as unknown as SQSRecordAttributes;
  return {
    messageId: required(message.MessageId, 'MessageId'),
    receiptHandle: required(message.ReceiptHandle, 'ReceiptHandle'),
    body: message.Body ?? '',
    attributes,
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN,
    awsRegion,
  };
}

/**
 * Receives up to `batchSize` messages with all system and message attributes: one
 * ReceiveMessage (long-polling `waitTimeSeconds`) when `batchSize` ≤ 10, as the event source
 * mapping does without a batching window; for larger sizes, further immediate receives until
 * the batch is full or the queue returns nothing new.
 */
export async function receiveBatch(
  sqs: SQSClient,
  options: { queueUrl: string; batchSize: number; waitTimeSeconds: number; visibilityTimeoutSeconds?: number },
): Promise<Message[]> {
  const batch = new Map<string, Message>();
  while (batch.size < options.batchSize) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: options.queueUrl,
        MaxNumberOfMessages: Math.min(10, options.batchSize - batch.size),
        WaitTimeSeconds: batch.size === 0 ? options.waitTimeSeconds : 0,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
        ...(options.visibilityTimeoutSeconds !== undefined
          ? { VisibilityTimeout: options.visibilityTimeoutSeconds }
          : {}),
      }),
    );
    const fresh = (out.Messages ?? []).filter((m) => m.MessageId !== undefined && !batch.has(m.MessageId));
    for (const message of fresh) batch.set(message.MessageId as string, message);
    // A message seen twice (visibility 0) means the queue has nothing new to add.
    if (fresh.length === 0 || options.batchSize <= 10 || fresh.length < (out.Messages ?? []).length) break;
  }
  return [...batch.values()];
}

/**
 * What Lambda does with a handler's outcome under `ReportBatchItemFailures`: returns the
 * message ids to keep (not delete), or `'all'` for a complete failure.
 *
 * - threw / timed out → `'all'`
 * - `undefined`, `null`, no or null or empty `batchItemFailures` → nothing kept
 * - an entry whose `itemIdentifier` is missing, empty, not a string, or not a message id of
 *   this batch, or `batchItemFailures` that is not an array → `'all'`
 */
export function failedMessageIds(
  event: SQSEvent,
  outcome: { ok: true; result: unknown } | { ok: false },
): Set<string> | 'all' {
  if (!outcome.ok) return 'all';
  const result = outcome.result as Partial<SQSBatchResponse> | null | undefined;
  if (result === null || result === undefined || typeof result !== 'object') return new Set();
  const failures = result.batchItemFailures as unknown;
  if (failures === null || failures === undefined) return new Set();
  if (!Array.isArray(failures)) return 'all';
  const ids = new Set(event.Records.map((record) => record.messageId));
  const failed = new Set<string>();
  for (const entry of failures) {
    const id = (entry as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id !== 'string' || id === '' || !ids.has(id)) return 'all';
    failed.add(id);
  }
  return failed;
}

/** Deletes the given records with DeleteMessageBatch (10 per call); returns ids that failed to delete. */
export async function deleteRecords(sqs: SQSClient, queueUrl: string, records: SQSRecord[]): Promise<string[]> {
  const notDeleted: string[] = [];
  for (let i = 0; i < records.length; i += 10) {
    const chunk = records.slice(i, i + 10);
    const out = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((record, n) => ({ Id: String(n), ReceiptHandle: record.receiptHandle })),
      }),
    );
    for (const failure of out.Failed ?? []) {
      const record = chunk[Number(failure.Id)];
      if (record) notDeleted.push(record.messageId);
    }
  }
  return notDeleted;
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`SQS message without ${what}`);
  return value;
}
