import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import type { DeadLetter, DeadLetterQueues, MoveTaskStart, ReceivedLetter } from '../core/control-ports';
import { JOB_ID_PATTERN } from '../core/enqueue';
import { ConflictError } from '../errors';
import { awsErrorName, translateAwsError } from './errors';

/** Error names an SQS endpoint answers for an action it does not implement (fauxqs: InvalidAction). */
const UNIMPLEMENTED = new Set([
  'InvalidAction',
  'UnknownOperation',
  'UnknownOperationException',
  'NotImplemented',
  'NotImplementedException',
]);

interface AnswerShape {
  name?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string | undefined> };
}

/**
 * True when an SQS endpoint answered that it cannot do this action at all, as opposed to a
 * failure of a call it does implement (throttling, access, an internal error): then redrive falls
 * back to receive + send + delete. It recognises
 * - a named "unimplemented" error ({@link UNIMPLEMENTED}; fauxqs answers InvalidAction);
 * - HTTP 501 Not Implemented;
 * - an HTTP 500 or 501 whose body is not an SQS protocol answer at all (moto 5 answers
 *   ListMessageMoveTasks and StartMessageMoveTask with an HTML error page, which the SDK reports
 *   as a `SyntaxError` "Deserialization error" with the status in `$metadata`). A real SQS 500
 *   is a JSON error with a name (InternalError), so it stays a dependency failure, and so do
 *   the HTML pages of a proxy or load balancer (502, 503, 504): those are outages, not a
 *   missing action.
 */
export function isUnimplementedAnswer(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as AnswerShape;
  const status = e.$metadata?.httpStatusCode;
  if (UNIMPLEMENTED.has(e.name ?? '') || status === 501) return true;
  if (status !== 500) return false;
  const contentType = Object.entries(e.$response?.headers ?? {}).find(([k]) => k.toLowerCase() === 'content-type')?.[1];
  const notProtocol =
    e.name === 'SyntaxError' ||
    /Deserialization error/i.test(e.message ?? '') ||
    (contentType !== undefined && /text\/html/i.test(contentType));
  return notProtocol;
}

/** The job id of a job message body (`{"v":1,"id","type"}`), else null. */
export function jobIdOf(body: string | undefined): string | null {
  if (body === undefined) return null;
  try {
    const parsed = JSON.parse(body) as { v?: unknown; id?: unknown; type?: unknown } | null;
    if (parsed?.v === 1 && typeof parsed.id === 'string' && JOB_ID_PATTERN.test(parsed.id)) return parsed.id;
  } catch {
    // not JSON: not a job message
  }
  return null;
}

const BODY_PREVIEW_CHARS = 256;
/** Bytes of bodies per SendMessageBatch (SQS allows 1 MiB in all; keep room for the envelope). */
const BATCH_BYTES = 1_000_000;

function toDeadLetter(message: Message): DeadLetter {
  const jobId = jobIdOf(message.Body);
  const sent = Number(message.Attributes?.SentTimestamp);
  return {
    messageId: message.MessageId ?? '',
    jobId,
    receiveCount: Number(message.Attributes?.ApproximateReceiveCount ?? 0),
    sentAt: Number.isFinite(sent) && sent > 0 ? new Date(sent).toISOString() : null,
    body: jobId === null ? (message.Body ?? '').slice(0, BODY_PREVIEW_CHARS) : null,
  };
}

/**
 * {@link DeadLetterQueues} on SQS. Redrive prefers SQS's own message move task
 * (StartMessageMoveTask); endpoints without it (fauxqs, moto: see {@link isUnimplementedAnswer})
 * report `unsupported` and the caller falls back to receive + send + delete.
 */
export class SqsDeadLetterQueues implements DeadLetterQueues {
  constructor(private readonly client: SQSClient) {}

  async peek(dlqUrl: string, max: number): Promise<DeadLetter[]> {
    try {
      const out = await this.client.send(
        new ReceiveMessageCommand({
          QueueUrl: dlqUrl,
          MaxNumberOfMessages: Math.max(1, Math.min(10, max)),
          // Visible again at once: looking does not hide messages from a redrive.
          VisibilityTimeout: 0,
          WaitTimeSeconds: 0,
          MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
        }),
      );
      return (out.Messages ?? []).map(toDeadLetter);
    } catch (error) {
      return translateAwsError(error, 'SQS ReceiveMessage (peek DLQ)');
    }
  }

  async depth(queueUrl: string): Promise<{ visible: number; inFlight: number }> {
    try {
      const out = await this.client.send(
        new GetQueueAttributesCommand({
          QueueUrl: queueUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return {
        visible: Number(out.Attributes?.ApproximateNumberOfMessages ?? 0),
        inFlight: Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
      };
    } catch (error) {
      return translateAwsError(error, 'SQS GetQueueAttributes');
    }
  }

  async startMove({ dlqArn, destinationArn }: { dlqArn: string; destinationArn: string }): Promise<MoveTaskStart> {
    // The call in flight, so an error names the one that failed.
    let call = 'ListMessageMoveTasks';
    try {
      const tasks = await this.client.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn, MaxResults: 1 }));
      const latest = tasks.Results?.[0];
      if (latest?.Status === 'RUNNING') {
        return {
          kind: 'running',
          taskHandle: latest.TaskHandle ?? null,
          moved: latest.ApproximateNumberOfMessagesMoved ?? null,
          toMove: latest.ApproximateNumberOfMessagesToMove ?? null,
        };
      }
      call = 'StartMessageMoveTask';
      const started = await this.client.send(
        new StartMessageMoveTaskCommand({ SourceArn: dlqArn, DestinationArn: destinationArn }),
      );
      return { kind: 'started', taskHandle: started.TaskHandle ?? '' };
    } catch (error) {
      if (isUnimplementedAnswer(error)) return { kind: 'unsupported' };
      if (awsErrorName(error)?.endsWith('UnsupportedOperation')) {
        throw new ConflictError(
          `SQS refused ${call} for this DLQ (is a message move task running already?); try again later`,
          'redrive_refused',
        );
      }
      return translateAwsError(error, `SQS ${call}`);
    }
  }

  async receive(queueUrl: string, max: number, visibilitySeconds: number): Promise<ReceivedLetter[]> {
    try {
      const out = await this.client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: Math.max(1, Math.min(10, max)),
          VisibilityTimeout: visibilitySeconds,
          WaitTimeSeconds: 0,
        }),
      );
      return (out.Messages ?? []).flatMap((m) =>
        m.MessageId && m.ReceiptHandle && m.Body !== undefined
          ? [{ messageId: m.MessageId, receiptHandle: m.ReceiptHandle, body: m.Body }]
          : [],
      );
    } catch (error) {
      return translateAwsError(error, 'SQS ReceiveMessage');
    }
  }

  async sendAll(queueUrl: string, bodies: string[]): Promise<Set<number>> {
    const sent = new Set<number>();
    // SendMessageBatch takes at most 1 MiB in all: group the bodies under that.
    const groups: number[][] = [];
    let bytes = Number.POSITIVE_INFINITY;
    bodies.forEach((body, i) => {
      const size = Buffer.byteLength(body, 'utf8');
      if (bytes + size > BATCH_BYTES) {
        groups.push([]);
        bytes = 0;
      }
      groups.at(-1)?.push(i);
      bytes += size;
    });
    for (const group of groups) {
      try {
        const out = await this.client.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: group.map((i) => ({ Id: `m${i}`, MessageBody: bodies[i] ?? '' })),
          }),
        );
        for (const entry of out.Successful ?? []) sent.add(Number((entry.Id ?? '').slice(1)));
      } catch (error) {
        if (sent.size > 0) return sent; // report what did go; the rest stays in the DLQ
        return translateAwsError(error, 'SQS SendMessageBatch');
      }
    }
    return sent;
  }

  async deleteAll(queueUrl: string, receiptHandles: string[]): Promise<number> {
    if (receiptHandles.length === 0) return 0;
    try {
      const out = await this.client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: receiptHandles.map((handle, i) => ({ Id: `m${i}`, ReceiptHandle: handle })),
        }),
      );
      return out.Successful?.length ?? 0;
    } catch (error) {
      return translateAwsError(error, 'SQS DeleteMessageBatch');
    }
  }
}
