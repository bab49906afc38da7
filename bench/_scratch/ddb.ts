import { PutItemCommand, UpdateItemCommand, CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { startLocalAws, localClients, createTableInput } from '../../test/local-aws/index';
import { JOB_TABLE } from '../../shared/core/table';
const aws = await startLocalAws();
try {
  const c = localClients(aws);
  await c.dynamo.send(new CreateTableCommand(createTableInput('tbl', JOB_TABLE)));
  const put = await c.dynamo.send(new PutItemCommand({ TableName: 'tbl', Item: { pk: { S: 'a' }, gsi1pk: { S: 'x' }, gsi1sk: { S: 'y' }, gsi2pk: { S: 'q' }, gsi2sk: { S: 'y' }, state: { S: 'queued' } }, ReturnConsumedCapacity: 'INDEXES' }));
  console.log(JSON.stringify(put.ConsumedCapacity));
  const up = await c.dynamo.send(new UpdateItemCommand({ TableName: 'tbl', Key: { pk: { S: 'a' } }, UpdateExpression: 'SET #s = :r, gsi2pk = :g', ExpressionAttributeNames: { '#s': 'state' }, ExpressionAttributeValues: { ':r': { S: 'running' }, ':g': { S: 'q2' } }, ReturnConsumedCapacity: 'INDEXES' }));
  console.log(JSON.stringify(up.ConsumedCapacity));
  const up2 = await c.dynamo.send(new UpdateItemCommand({ TableName: 'tbl', Key: { pk: { S: 'a' } }, UpdateExpression: 'SET foo = :r', ExpressionAttributeValues: { ':r': { S: 'running' } }, ReturnConsumedCapacity: 'INDEXES' }));
  console.log('non-projected', JSON.stringify(up2.ConsumedCapacity));
  const up3 = await c.dynamo.send(new UpdateItemCommand({ TableName: 'tbl', Key: { pk: { S: 'a' } }, UpdateExpression: 'SET #s = :r', ExpressionAttributeNames: { '#s': 'state' }, ExpressionAttributeValues: { ':r': { S: 'done' } }, ReturnConsumedCapacity: 'INDEXES' }));
  console.log('projected state only', JSON.stringify(up3.ConsumedCapacity));
  c.destroy();
} finally { await aws.stop(); }
