import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { CostRecorder } from '../core/metrics';
import { meterCost } from './cost-middleware';

/** The AWS SDK clients Orrery uses. Pass your own (e.g. with extra middleware) or let one be built. */
export interface AwsClients {
  dynamo: DynamoDBClient;
  sqs: SQSClient;
  scheduler: SchedulerClient;
  /** The payload bucket's (shared/aws/s3-blob-store.ts); built on first use, so functions that never offload make none. */
  readonly s3?: S3Client;
}

export interface AwsClientOptions {
  /**
   * Counts each request and DynamoDB write unit of these clients for the job being handled
   * (see shared/aws/cost-middleware.ts).
   * @default no metering
   */
  cost?: CostRecorder;
}

/**
 * Builds clients from the default configuration chain: region, credentials and endpoints come
 * from the environment (`AWS_REGION`, `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_SQS`,
 * `AWS_ENDPOINT_URL_SCHEDULER`, `AWS_ENDPOINT_URL_S3`, ...), which is how local AWS and LocalStack are reached.
 *
 * @example
 * const meter = new CostMeter();
 * const clients = createAwsClients({ cost: meter });
 */
export function createAwsClients(options: AwsClientOptions = {}): AwsClients {
  const { cost } = options;
  let s3: S3Client | undefined;
  const clients = {
    dynamo: new DynamoDBClient({}),
    sqs: new SQSClient({}),
    scheduler: new SchedulerClient({}),
    get s3(): S3Client {
      if (!s3) {
        s3 = new S3Client({});
        if (cost) meterCost(s3, cost);
      }
      return s3;
    },
  };
  if (cost) {
    meterCost(clients.dynamo, cost);
    meterCost(clients.sqs, cost);
    meterCost(clients.scheduler, cost);
  }
  return clients;
}
