import { DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { SQSClient, SendMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { startLocalAws, deployLocal, LOCAL_CREDENTIALS } from '../local-aws/index';
import { FaultInjector } from '../support/faults';
const aws = await startLocalAws();
const dep = await deployLocal(aws, { prefix: 'scr', jobTypes: [{ type: 'echo', timeoutMs: 1000 }] });
const common = { region: 'us-east-1', credentials: LOCAL_CREDENTIALS };
const d = new DynamoDBClient({ ...common, endpoint: aws.endpoints.dynamodb });
const s = new SQSClient({ ...common, endpoint: aws.endpoints.sqs });
console.log('sqs maxAttempts', await s.config.maxAttempts());
const f = new FaultInjector();
f.install(d, 'dynamodb'); f.install(s, 'sqs');
const T = dep.config.tableName;
for (const kind of ['throttle', 'server', 'timeout'] as const) for (const phase of ['before', 'after'] as const) {
  for (const times of [1, Infinity]) {
    f.script({ match: (c) => c.command === 'UpdateItem', kind, phase, times });
    try {
      const out = await d.send(new UpdateItemCommand({ TableName: T, Key: { pk: { S: `job#x-${kind}-${phase}` } }, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': { N: '1' } } }));
      const got = await d.send(new GetItemCommand({ TableName: T, Key: { pk: { S: `job#x-${kind}-${phase}` } }, ConsistentRead: true }));
      console.log('ddb', kind, phase, times, 'ok attempts', out.$metadata.attempts, 'n=', got.Item?.n?.N);
    } catch (e: any) { console.log('ddb', kind, phase, times, 'ERR', e.name, e.code, e.$metadata, e.$fault, e.message); }
    f['scripted'].length = 0;
    f.script({ match: (c) => c.command === 'SendMessage', kind, phase, times });
    try {
      const out = await s.send(new SendMessageCommand({ QueueUrl: dep.queues.echo!.url, MessageBody: '{"v":1,"id":"abc","type":"echo"}' }));
      console.log('sqs', kind, phase, times, 'ok attempts', out.$metadata.attempts);
    } catch (e: any) { console.log('sqs', kind, phase, times, 'ERR', e.name, e.code, e.$metadata?.httpStatusCode, e.$metadata?.attempts, e.$fault, e.message); }
    f['scripted'].length = 0;
  }
}
const r = await s.send(new ReceiveMessageCommand({ QueueUrl: dep.queues.echo!.url, MaxNumberOfMessages: 10 }));
console.log('messages in queue', r.Messages?.length);
console.log(f.summary());
d.destroy(); s.destroy();
await aws.stop();
