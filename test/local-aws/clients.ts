import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SQSClient } from '@aws-sdk/client-sqs';

/** Where the local emulators listen. */
export interface LocalEndpoints {
  dynamodb: string;
  sqs: string;
  scheduler: string;
  /** fauxqs serves S3 on the SQS port (path-style: the endpoint is an IP address). */
  s3?: string;
}

/** Anything that knows the local endpoints and region (a `LocalAws` from `startLocalAws`). */
export interface LocalAwsTarget {
  endpoints: LocalEndpoints;
  region: string;
}

/** Dummy credentials: the emulators accept any, real AWS would reject these. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** SDK clients pinned to the local emulators. */
export interface LocalClients {
  dynamo: DynamoDBClient;
  sqs: SQSClient;
  scheduler: SchedulerClient;
  /** Closes the clients' sockets. */
  destroy(): void;
}

/**
 * Clients for harness code (deploying, inspecting, asserting) with explicit endpoints, so the
 * harness works whether or not `applyEnv()` ran. Production code never does this: it builds
 * `new XClient({})` and reaches the emulators through `AWS_ENDPOINT_URL_*` only.
 *
 * @example
 * const { dynamo, destroy } = localClients(aws);
 * await dynamo.send(new DescribeTableCommand({ TableName: deployment.config.tableName }));
 * destroy();
 */
export function localClients(target: LocalAwsTarget): LocalClients {
  const common = { region: target.region, credentials: LOCAL_CREDENTIALS };
  const dynamo = new DynamoDBClient({ ...common, endpoint: target.endpoints.dynamodb });
  const sqs = new SQSClient({ ...common, endpoint: target.endpoints.sqs });
  const scheduler = new SchedulerClient({ ...common, endpoint: target.endpoints.scheduler });
  return {
    dynamo,
    sqs,
    scheduler,
    destroy() {
      dynamo.destroy();
      sqs.destroy();
      scheduler.destroy();
    },
  };
}
