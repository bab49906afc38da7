import { startLocalAws, deployLocal, destroyLocal, uniquePrefix, startQueueRunner, drain } from '/work/main/test/local-aws/index';
import { SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
let t = performance.now();
const aws = await startLocalAws();
console.log('startLocalAws (own DDB) ms', Math.round(performance.now() - t), 'ddb startup', aws.dynamodb?.startupMs);
t = performance.now();
const aws2 = await startLocalAws({ dynamodbEndpoint: aws.endpoints.dynamodb });
console.log('startLocalAws (reuse DDB) ms', Math.round(performance.now() - t));
aws.applyEnv();
t = performance.now();
const d = await deployLocal(aws, { prefix: uniquePrefix('smoke'), jobTypes: [{ type: 'a', timeoutMs: 1000 }, { type: 'b', timeoutMs: 1000 }] });
console.log('deployLocal ms', Math.round(performance.now() - t));
// end-to-end rate: send N, runner processes, drain
const sqs = new SQSClient({});
const N = 2000;
const url = d.queues.a!.url;
t = performance.now();
for (let i = 0; i < N; i += 10) {
  const { SendMessageBatchCommand } = await import('@aws-sdk/client-sqs');
  await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: Array.from({ length: 10 }, (_, n) => ({ Id: String(n), MessageBody: `m${i + n}` })) }));
}
const runner = startQueueRunner({ queueUrl: url, queueArn: d.queues.a!.arn, functionName: 'a', handler: async () => {}, maxConcurrency: 4 });
await drain({ queueUrl: url, timeoutMs: 60_000 });
await runner.stop();
console.log('send(batch)+runner+delete msgs/s', Math.round(N / ((performance.now() - t) / 1000)), runner.stats.invocations, 'invocations');
await destroyLocal(aws, d);
sqs.destroy();
await aws2.stop();
t = performance.now();
await aws.stop();
console.log('stop ms', Math.round(performance.now() - t));
