import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SQSClient } from '@aws-sdk/client-sqs';

/** The AWS SDK clients Orrery uses. Pass your own (e.g. with extra middleware) or let one be built. */
export interface AwsClients {
  dynamo: DynamoDBClient;
  sqs: SQSClient;
  scheduler: SchedulerClient;
}

/**
 * Builds clients from the default configuration chain: region, credentials and endpoints come
 * from the environment (`AWS_REGION`, `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_SQS`,
 * `AWS_ENDPOINT_URL_SCHEDULER`, ...), which is how local AWS and LocalStack are reached.
 */
export function createAwsClients(): AwsClients {
  return { dynamo: new DynamoDBClient({}), sqs: new SQSClient({}), scheduler: new SchedulerClient({}) };
}
