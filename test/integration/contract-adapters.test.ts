/**
 * The job-port contract (test/contract/job-store.contract.ts) against the DynamoDB adapters
 * (DynamoJobStore, DynamoJobControl) on DynamoDB Local: the same cases the fakes pass in
 * test/unit/contract-fakes.test.ts.
 */
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, inject } from 'vitest';
import { DynamoJobControl } from '../../shared/aws/dynamo-job-control';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { JOB_TABLE, keys } from '../../shared/core/table';
import { type ContractLeg, jobStoreContract } from '../contract/job-store.contract';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { createTableInput } from '../local-aws/deploy';
import { uniquePrefix } from '../local-aws/namespace';
import type { DueAttributes } from '../support/fakes';

const tableName = `${uniquePrefix('contract')}-jobs`;
const dynamo = new DynamoDBClient({
  endpoint: inject('dynamodbEndpoint'),
  region: 'us-east-1',
  credentials: LOCAL_CREDENTIALS,
});

/** The item's `dueBucket` and `dueAt`, as the supervisor's `DynamoDueIndex` reads them. */
async function readDue(client: DynamoDBClient, table: string, id: string): Promise<DueAttributes | undefined> {
  const out = await client.send(
    new GetItemCommand({ TableName: table, Key: { pk: { S: keys.job(id) } }, ConsistentRead: true }),
  );
  if (!out.Item) return undefined;
  const raw = unmarshall(out.Item) as { dueBucket?: unknown; dueAt?: unknown };
  return {
    ...(typeof raw.dueBucket === 'string' ? { dueBucket: raw.dueBucket } : {}),
    ...(typeof raw.dueAt === 'number' ? { dueAt: raw.dueAt } : {}),
  };
}

const leg: ContractLeg = {
  store: new DynamoJobStore(dynamo, tableName),
  control: new DynamoJobControl(dynamo, tableName),
  dueOf: (id) => readDue(dynamo, tableName, id),
};

beforeAll(async () => {
  await dynamo.send(new CreateTableCommand(createTableInput(tableName, JOB_TABLE)));
});

afterAll(async () => {
  await dynamo.send(new DeleteTableCommand({ TableName: tableName }));
  dynamo.destroy();
});

describe('job ports contract: DynamoJobStore and DynamoJobControl on DynamoDB Local', () => {
  jobStoreContract(async () => leg);
});
