import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
const d = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
console.log(d.middlewareStack.identify());
console.log('maxAttempts', await d.config.maxAttempts());
const s = new SQSClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
console.log(s.middlewareStack.identify());
console.log('retryStrategy', (await d.config.retryStrategy()).constructor.name);
