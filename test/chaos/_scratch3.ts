import { SQSClient, SendMessageCommand, ReceiveMessageCommand, DeleteMessageCommand, ChangeMessageVisibilityCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { startLocalSqs } from '../local-aws/sqs';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
const sqs = await startLocalSqs();
const s = new SQSClient({ region: 'us-east-1', credentials: LOCAL_CREDENTIALS, endpoint: sqs.endpoint });
const { QueueUrl } = await s.send(new CreateQueueCommand({ QueueName: 'q', Attributes: { VisibilityTimeout: '1' } }));
const count = async () => { const a = await s.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] })); return [a.Attributes?.ApproximateNumberOfMessages, a.Attributes?.ApproximateNumberOfMessagesNotVisible]; };
await s.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
const r1 = await s.send(new ReceiveMessageCommand({ QueueUrl }));
const h1 = r1.Messages![0]!.ReceiptHandle!;
await new Promise(r => setTimeout(r, 1200));
const r2 = await s.send(new ReceiveMessageCommand({ QueueUrl }));
const h2 = r2.Messages![0]!.ReceiptHandle!;
console.log('same id', r1.Messages![0]!.MessageId === r2.Messages![0]!.MessageId, h1 === h2);
try { await s.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: h1, VisibilityTimeout: 5 })); console.log('CMV stale ok'); } catch (e: any) { console.log('CMV stale ERR', e.name); }
try { await s.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: h1 })); console.log('delete stale ok'); } catch (e: any) { console.log('delete stale ERR', e.name); }
console.log('counts after stale delete', await count());
try { await s.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: h2 })); console.log('delete h2 ok'); } catch (e: any) { console.log('delete h2 ERR', e.name); }
console.log('counts', await count());
try { await s.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: h2, VisibilityTimeout: 5 })); console.log('CMV deleted ok'); } catch (e: any) { console.log('CMV deleted ERR', e.name, e.message); }
s.destroy(); await sqs.stop();
