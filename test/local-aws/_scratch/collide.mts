import { startDynamoDbLocal } from '/work/main/test/local-aws/dynamodb-local';
import { createServer } from 'node:net';
const srv = createServer(); await new Promise<void>((r) => srv.listen(0, '0.0.0.0', () => r()));
const port = (srv.address() as any).port;
try { await startDynamoDbLocal({ port }); console.log('unexpected start'); } catch (e) { console.log('fixed port error:', String(e).split('\n').slice(0, 3).join(' | ')); }
srv.close();
