import { startDynamoDbLocal } from '/work/main/test/local-aws/dynamodb-local';
const d = await startDynamoDbLocal();
console.log('PID', d.pid);
setInterval(() => {}, 1000);
