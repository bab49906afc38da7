/**
 * Holding one request while others run, for race tests: a latch a test opens, and a DynamoDB
 * Local client whose matching TransactWriteItems waits on it (an SDK middleware waits before
 * sending the request). No mock of DynamoDB: the held request is sent as is once opened.
 */
import { DynamoDBClient, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { latch } from './latch';

/** A client of its own on the global DynamoDB Local, for a test to add middleware to. */
export function localDynamoClient(): DynamoDBClient {
  return new DynamoDBClient({
    endpoint: inject('dynamodbEndpoint'),
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
  });
}

/**
 * A client of the global DynamoDB Local whose first TransactWriteItems matching `holds` waits
 * until `open()`; `reached` resolves once it waits.
 */
export function holdingTransaction(holds: (items: TransactWriteItem[]) => boolean) {
  const client = localDynamoClient();
  const gate = latch();
  let held = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const items = (args.input as { TransactItems?: TransactWriteItem[] }).TransactItems;
      if (!held && context.commandName === 'TransactWriteItemsCommand' && items && holds(items)) {
        held = true;
        await gate.wait();
      }
      return next(args);
    },
    { step: 'initialize', name: 'holdTransaction' },
  );
  return { client, open: gate.open, reached: gate.reached };
}
