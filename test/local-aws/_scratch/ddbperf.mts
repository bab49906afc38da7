import { startDynamoDbLocal } from '/work/main/test/local-aws/dynamodb-local';
import { DynamoDBClient, CreateTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { execSync } from 'node:child_process';
const jvmArgs = process.argv[2] === 'default' ? [] : undefined;
const d = await startDynamoDbLocal({ jvmArgs });
console.log(execSync(`ps -o pid,ppid,rss,comm -p ${d.pid}`).toString());
const c = new DynamoDBClient({ endpoint: d.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
await c.send(new CreateTableCommand({ TableName: 'ttt', BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }] }));
for (const round of [1, 2]) {
  const t = performance.now();
  for (let i = 0; i < 1000; i++) await c.send(new PutItemCommand({ TableName: 'ttt', Item: { pk: { S: `r${round}-${i}` }, v: { N: '1' } }, ConditionExpression: 'attribute_not_exists(pk)' }));
  console.log('round', round, 'ops/s', Math.round(1000 / ((performance.now() - t) / 1000)));
}
console.log(execSync(`ps -o pid,rss,comm -p ${d.pid}`).toString());
await d.stop();
