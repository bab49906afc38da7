import { startDynamoDbLocal, processAlive } from '/work/main/test/local-aws/dynamodb-local';
const jvmArgs = process.argv[2] === 'default' ? [] : undefined;
for (let i = 0; i < 3; i++) {
  const d = await startDynamoDbLocal({ jvmArgs });
  console.log('startup ms', d.startupMs, 'pid', d.pid, d.endpoint, 'alive', processAlive(d.pid));
  const t = performance.now();
  await d.stop();
  console.log('stop ms', Math.round(performance.now() - t), 'alive after', processAlive(d.pid));
}
