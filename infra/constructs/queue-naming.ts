import { Aws, Fn, Stack } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ENV } from '../../shared/config';
import { isQueueNamePrefix, MAX_QUEUE_PREFIX, queueNames } from '../../shared/core/queue-settings';
import { fnv1a } from '../../shared/core/table';

/**
 * How a platform names its queues, so that no function needs a list of queue URLs (which grows
 * with the job types, past Lambda's 4 KB for all environment variables): a type's ready queue is
 * `<prefix>_ready_<type>` and its DLQ `<prefix>_dlq_<type>`, and every function derives a
 * queue's URL and ARN from the constant-size variables {@link environment} gives it. The same
 * names give IAM resource patterns that match exactly the platform's ready queues
 * ({@link readyQueueArns}) or DLQs ({@link deadLetterQueueArns}), so no policy grows with the types.
 *
 * @example
 * const naming = new QueueNaming(this, 'Orrery');
 * new Queue(this, 'Ready', { queueName: naming.names('send-email').ready });
 */
export class QueueNaming {
  /** Letters, digits and `-`, 1–32 characters. */
  readonly prefix: string;
  /** `arn:<partition>:sqs:<region>:<account>:<prefix>_ready_*` */
  readonly readyQueueArns: string;
  /** `arn:<partition>:sqs:<region>:<account>:<prefix>_dlq_*` */
  readonly deadLetterQueueArns: string;
  private readonly arnBase: string;
  private readonly urlBase: string;

  constructor(scope: Construct, prefix?: string) {
    this.prefix = prefix ?? defaultPrefix(Stack.of(scope).stackName);
    if (!isQueueNamePrefix(this.prefix)) {
      throw new Error(
        `JobPlatform: queueNamePrefix must be 1-${MAX_QUEUE_PREFIX} letters, digits or - (got "${this.prefix}")`,
      );
    }
    this.arnBase = Fn.join('', ['arn:', Aws.PARTITION, ':sqs:', Aws.REGION, ':', Aws.ACCOUNT_ID, ':']);
    // What CloudFormation's Ref of a queue gives: https://sqs.<region>.<url suffix>/<account>/<name>
    this.urlBase = Fn.join('', ['https://sqs.', Aws.REGION, '.', Aws.URL_SUFFIX, '/', Aws.ACCOUNT_ID, '/']);
    this.readyQueueArns = `${this.arnBase}${this.prefix}_ready_*`;
    this.deadLetterQueueArns = `${this.arnBase}${this.prefix}_dlq_*`;
  }

  /** The physical names of a type's queues. */
  names(type: string): { ready: string; dlq: string } {
    return queueNames(this.prefix, type);
  }

  /** The variables every function reads the naming from (constant in size). */
  environment(): Record<string, string> {
    return {
      [ENV.queueUrlBase]: this.urlBase,
      [ENV.queueArnBase]: this.arnBase,
      [ENV.queuePrefix]: this.prefix,
    };
  }
}

/** The stack name when it fits, else its first 23 characters and a hash of the whole. */
function defaultPrefix(stackName: string): string {
  if (stackName.length <= MAX_QUEUE_PREFIX && isQueueNamePrefix(stackName)) return stackName;
  const clean = stackName.replace(/[^A-Za-z0-9-]/g, '-');
  return `${clean.slice(0, MAX_QUEUE_PREFIX - 9)}-${fnv1a(stackName).toString(16).padStart(8, '0')}`;
}
