import { Duration } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { MAX_RECEIVE_COUNT, RETENTION_SECONDS, visibilityTimeoutSeconds } from '../../shared/core/queue-settings';
import { acknowledge } from './acknowledge';

export interface JobQueueProps {
  /** Timeout (seconds) of the worker Lambda that consumes the ready queue. */
  readonly workerTimeoutSeconds: number;
  /**
   * The worker's batching window (event source mapping `MaximumBatchingWindowInSeconds`): Lambda
   * advises a visibility timeout of 6 × the function timeout plus this window.
   * @default 0
   */
  readonly batchingWindowSeconds?: number;
  /**
   * Receives before SQS moves a message to the DLQ.
   * @default MAX_RECEIVE_COUNT (30) from shared/core/queue-settings.ts
   */
  readonly maxReceiveCount?: number;
  /**
   * Physical names of the ready queue and the DLQ (the platform derives them from the type, so
   * its functions find a queue without a list of URLs).
   * @default names CloudFormation generates
   */
  readonly names?: { ready: string; dlq: string };
}

/**
 * One job type's ready queue and its dead-letter queue. Both use SQS-managed encryption, deny
 * non-TLS requests, and keep messages for the maximum 14 days. The ready queue's visibility
 * timeout is `VISIBILITY_FACTOR` × the worker timeout, and after `maxReceiveCount` receives a
 * message moves to the DLQ (inspect it there, then redrive with StartMessageMoveTask).
 *
 * @example
 * const queues = new JobQueue(this, 'EmailQueue', { workerTimeoutSeconds: 40 });
 * queues.queue.grantSendMessages(producer);
 */
export class JobQueue extends Construct {
  /** Where jobs of this type wait for a worker. */
  readonly queue: Queue;
  /** Where messages land after `maxReceiveCount` receives. */
  readonly deadLetterQueue: Queue;
  /** Receives before SQS moves a message to the DLQ. */
  readonly maxReceiveCount: number;

  constructor(scope: Construct, id: string, props: JobQueueProps) {
    super(scope, id);
    const maxReceiveCount = props.maxReceiveCount ?? MAX_RECEIVE_COUNT;
    this.maxReceiveCount = maxReceiveCount;
    const retentionPeriod = Duration.seconds(RETENTION_SECONDS);
    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      ...(props.names ? { queueName: props.names.dlq } : {}),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod,
    });
    this.queue = new Queue(this, 'ReadyQueue', {
      ...(props.names ? { queueName: props.names.ready } : {}),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod,
      visibilityTimeout: Duration.seconds(
        visibilityTimeoutSeconds(props.workerTimeoutSeconds, props.batchingWindowSeconds ?? 0),
      ),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount },
    });
    acknowledge(
      this.deadLetterQueue,
      'Serverless-SQSRedrivePolicy',
      'This queue is the dead-letter queue at the end of the ready queue redrive chain; giving it a ' +
        'redrive policy of its own would only move dead jobs further. Operators inspect it and move ' +
        'messages back with StartMessageMoveTask.',
    );
  }
}
