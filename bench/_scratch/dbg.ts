import { startBenchAws } from '../local';
import { CallRecorder, countedClients, countedEsmClient, asActor } from '../counting-middleware';
import { startLocalPlatform } from '../../test/local-aws/local-platform';
import { runOnce } from '../../test/local-aws/index';
import { echo } from '../../functions/jobs/echo';
import { functionUrlEvent } from '../fixtures';
const b = await startBenchAws();
try {
  b.aws.applyEnv();
  const recorder = new CallRecorder();
  const platform = await startLocalPlatform({ aws: b.aws, prefix: 'dbg', jobs: [echo as any], clients: countedClients(recorder), runWorkers: false });
  const esm = countedEsmClient(recorder);
  const r = await asActor('api', () => platform.api(functionUrlEvent('POST', '/jobs', { type: 'echo', payload: { a: 1 } })));
  console.log(r);
  const q = platform.deployment.queues.echo!;
  console.log(q, b.aws.sqs.inspect('dbg-echo'));
  const res = await runOnce({ queueUrl: q.url, queueArn: q.arn, functionName: 'x', batchSize: 1, waitTimeSeconds: 1, sqs: esm, handler: (e) => platform.workers.echo!(e) as any });
  console.log(res, recorder.calls);
  await platform.stop(); esm.destroy();
} finally { await b.stop(); }
