/**
 * A job table of its own for one integration test file, on the DynamoDB Local the run shares:
 * created before the file's tests, deleted after them, with a client pointed at it.
 */
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, inject } from 'vitest';
import { JOB_TABLE } from '../../shared/core/table';
import { LOCAL_CREDENTIALS } from './clients';
import { createTableInput } from './deploy';
import { uniquePrefix } from './namespace';

/**
 * Registers `beforeAll`/`afterAll` hooks that create and delete a table shaped by `JOB_TABLE`,
 * named after `label` and unique to this run.
 *
 * @example
 * const { dynamo, tableName } = useJobTable('store');
 * const store = new DynamoJobStore(dynamo, tableName);
 */
export function useJobTable(label: string): { dynamo: DynamoDBClient; tableName: string; prefix: string } {
  const prefix = uniquePrefix(label);
  const tableName = `${prefix}-jobs`;
  const dynamo = new DynamoDBClient({
    endpoint: inject('dynamodbEndpoint'),
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
  });
  beforeAll(async () => {
    await dynamo.send(new CreateTableCommand(createTableInput(tableName, JOB_TABLE)));
  });
  afterAll(async () => {
    await dynamo.send(new DeleteTableCommand({ TableName: tableName }));
    dynamo.destroy();
  });
  return { dynamo, tableName, prefix };
}
