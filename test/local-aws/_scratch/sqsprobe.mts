import { startLocalSqs } from '/work/main/test/local-aws/sqs';
import { SQSClient, CreateQueueCommand, SendMessageCommand, ReceiveMessageCommand, DeleteMessageCommand, ChangeMessageVisibilityCommand, GetQueueAttributesCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
const s = await startLocalSqs();
Object.assign(process.env, { AWS_ENDPOINT_URL_SQS: s.endpoint, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' });
const origWarn = console.warn; let warns = 0; console.warn = (...a) => { warns++; origWarn(...a); };
const c = new SQSClient({});
const dlq = await c.send(new CreateQueueCommand({ QueueName: 'p-dlq' }));
console.log('dlq', dlq.QueueUrl);
const dlqArn = (await c.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn;
const q = await c.send(new CreateQueueCommand({ QueueName: 'p', Attributes: { VisibilityTimeout: '1', RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 2 }) } }));
console.log('q', q.QueueUrl, (await c.send(new GetQueueUrlCommand({ QueueName: 'p' }))).QueueUrl, dlqArn);
await c.send(new SendMessageCommand({ QueueUrl: q.QueueUrl, MessageBody: 'hi', MessageAttributes: { a: { DataType: 'String', StringValue: 'b' } } }));
const r = await c.send(new ReceiveMessageCommand({ QueueUrl: q.QueueUrl, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'], WaitTimeSeconds: 1 }));
console.log(JSON.stringify(r.Messages, null, 1));
await c.send(new ChangeMessageVisibilityCommand({ QueueUrl: q.QueueUrl, ReceiptHandle: r.Messages![0]!.ReceiptHandle, VisibilityTimeout: 0 }));
const r2 = await c.send(new ReceiveMessageCommand({ QueueUrl: q.QueueUrl, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 1 }));
console.log('second receive count', r2.Messages?.[0]?.Attributes?.ApproximateReceiveCount);
await new Promise(r => setTimeout(r, 1100));
const r3 = await c.send(new ReceiveMessageCommand({ QueueUrl: q.QueueUrl, WaitTimeSeconds: 1 }));
console.log('third receive (should be empty, moved to DLQ)', r3.Messages?.length ?? 0, s.inspect('p-dlq'));
const d = await c.send(new ReceiveMessageCommand({ QueueUrl: dlq.QueueUrl, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 1 }));
console.log('dlq got', d.Messages?.[0]?.Body, d.Messages?.[0]?.Attributes);
await c.send(new DeleteMessageCommand({ QueueUrl: dlq.QueueUrl, ReceiptHandle: d.Messages![0]!.ReceiptHandle }));
// round-trip rate
const N = 1000; let t = performance.now();
for (let i = 0; i < N; i++) {
  await c.send(new SendMessageCommand({ QueueUrl: q.QueueUrl, MessageBody: 'x' + i }));
  const m = await c.send(new ReceiveMessageCommand({ QueueUrl: q.QueueUrl }));
  await c.send(new DeleteMessageCommand({ QueueUrl: q.QueueUrl, ReceiptHandle: m.Messages![0]!.ReceiptHandle }));
}
console.log('sequential send+receive+delete msgs/s', Math.round(N / ((performance.now() - t) / 1000)), 'warns', warns);
await s.stop();
