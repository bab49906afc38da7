/**
 * `npm run dev`: starts local AWS (DynamoDB Local, fauxqs SQS, the Scheduler stand-in) on
 * 127.0.0.1, deploys the example job types into it, serves the API and runs the workers, and
 * prints every job state change as it happens. The dashboard is served beside the API, at
 * `/ui/` (built from `ui/src` at start, in well under a second). Ctrl-C stops everything.
 */
import { accountSync } from '../functions/jobs/account-sync';
import { apiCall } from '../functions/jobs/api-call';
import { echo } from '../functions/jobs/echo';
import { flaky } from '../functions/jobs/flaky';
import { fulfilOrder } from '../functions/jobs/fulfil-order';
import { packItem } from '../functions/jobs/pack-item';
import { reindex } from '../functions/jobs/reindex';
import { shipOrder } from '../functions/jobs/ship-order';
import { sleep } from '../functions/jobs/sleep';
import { tenantSync } from '../functions/jobs/tenant-sync';
import { welcomeEmail } from '../functions/jobs/welcome-email';
import type { Job } from '../shared/core/job';
import type { JobStore } from '../shared/core/ports';
import { createDashboardHandler, type DashboardHandler } from '../shared/dashboard/server';
import { CostMeter } from '../shared/runtime/cost-meter';
import { startLocalAws } from '../test/local-aws/index';
import { startLocalPlatform } from '../test/local-aws/local-platform';
import { buildUi, UI_DIST } from '../ui/build';

const port = Number(process.env.ORRERY_PORT ?? 4600);
const color = process.stdout.isTTY;
const paint = (code: number, text: string) => (color ? `\u001b[${code}m${text}\u001b[0m` : text);
const STATE_COLORS: Record<string, number> = {
  succeeded: 32,
  failed: 31,
  retrying: 33,
  running: 36,
  cancelled: 90,
  skipped: 90,
};

function show(job: Pick<Job, 'id' | 'type' | 'attempts'>, state: string, detail = ''): void {
  const time = new Date().toISOString().slice(11, 23);
  const painted = paint(STATE_COLORS[state] ?? 37, state.padEnd(9));
  console.log(
    `${time}  ${painted}  ${job.type.padEnd(6)} ${job.id}  attempt ${job.attempts}${detail ? `  ${detail}` : ''}`,
  );
}

/** Wraps the store so every successful state change is printed; other methods pass through. */
function observe(store: JobStore): JobStore {
  const wrapped: JobStore = Object.create(store);
  wrapped.create = async (job) => {
    const out = await store.create(job);
    if (out.created) show(job, job.state, `runAt ${job.runAt}`);
    return out;
  };
  wrapped.claim = async (input) => {
    const out = await store.claim(input);
    if (out.kind === 'claimed') show(out.job, 'running');
    return out;
  };
  wrapped.succeed = async (input) => {
    await store.succeed(input);
    show(input.job, 'succeeded', `result ${JSON.stringify(input.result ?? null).slice(0, 80)}`);
  };
  wrapped.retry = async (input) => {
    await store.retry(input);
    show(
      input.job,
      'retrying',
      `next at ${new Date(input.runAt).toISOString()}: ${input.errors.at(-1)?.message ?? ''}`,
    );
  };
  wrapped.fail = async (input) => {
    await store.fail(input);
    show(input.job, 'failed', input.errors.at(-1)?.message ?? '');
  };
  return wrapped;
}

async function main(): Promise<void> {
  const started = Date.now();
  buildUi(UI_DIST);
  // The dashboard answers /ui/ and /api/ on the API's own port; /api/ comes back to the API.
  let apiUrl = '';
  const dashboard: DashboardHandler = createDashboardHandler({
    upstream: () => apiUrl,
    assetsDir: UI_DIST,
    pollMs: 2_000,
  });
  const aws = await startLocalAws();
  const platform = await startLocalPlatform({
    aws,
    prefix: 'orrery-dev',
    jobs: [
      echo,
      flaky,
      sleep,
      tenantSync,
      apiCall,
      accountSync,
      welcomeEmail,
      reindex,
      fulfilOrder,
      packItem,
      shipOrder,
    ],
    port,
    wrapStore: observe,
    supervisor: { intervalMs: 5_000 },
    // each job's own AWS requests and write units, shown as `cost` on GET /jobs/{id}, as deployed
    meter: new CostMeter(),
    functionUrl: { fallback: dashboard },
  });
  const url = platform.url;
  apiUrl = url;
  console.log(`
${paint(1, 'Orrery is running locally')} (started in ${Date.now() - started} ms)

  API         ${url}
  Dashboard   ${url}/ui/
  DynamoDB    ${aws.endpoints.dynamodb}   table ${platform.config.tableName}
  SQS         ${aws.endpoints.sqs}
  Scheduler   ${aws.endpoints.scheduler}   group ${platform.config.scheduleGroup}
  Job types   ${Object.keys(platform.workers).join(', ')}

Try it:

  curl -s -X POST ${url}/jobs -H 'content-type: application/json' \\
       -d '{"type":"echo","payload":{"hello":"world"}}'
  curl -s ${url}/jobs/<id>

  curl -s -X POST ${url}/jobs -H 'content-type: application/json' -d '{"type":"flaky","payload":{"failTimes":2}}'
  curl -s -X POST ${url}/jobs -H 'content-type: application/json' -d '{"type":"sleep","payload":{"ms":3000},"delaySeconds":5}'

Flow control (docs/flow-control.md):

  tenant-sync    at most 2 at once per tenant      curl -s -X POST ${url}/jobs -H 'content-type: application/json' -d '{"type":"tenant-sync","payload":{"tenantId":"t1","ms":3000}}'
  api-call       5 a second per API key (burst 5)  curl -s -X POST ${url}/jobs -H 'content-type: application/json' -d '{"type":"api-call","payload":{"apiKey":"k1","path":"/v1/items"}}'
  account-sync   newest cancels the running one    curl -s -X POST ${url}/jobs -H 'content-type: application/json' -d '{"type":"account-sync","payload":{"accountId":"a1"}}'
  welcome-email  1 per user per hour, rest skipped curl -s -X POST ${url}/jobs -H 'content-type: application/json' -d '{"type":"welcome-email","payload":{"userId":"u1","to":"u1@example.com"}}'
  reindex        one run per burst, 5 s quiet      curl -s -X POST ${url}/jobs -H 'content-type: application/json' -d '{"type":"reindex","payload":{"catalogId":"c1","change":"price"}}'
  key state      curl -s ${url}/types/tenant-sync/keys/t1

A workflow (docs/workflows.md): an order flow, its steps, a wait for the payment signal, a sleep, a fan-out and a join:

  curl -s -X POST ${url}/flows -H 'content-type: application/json' -d '{"id":"order-7","jobs":[{"id":"o7","type":"fulfil-order","payload":{"orderId":"o7","items":["book","lamp"]}},{"id":"o7-pack-book","type":"pack-item","payload":{"orderId":"o7","item":"book"},"dependsOn":["o7"]},{"id":"o7-pack-lamp","type":"pack-item","payload":{"orderId":"o7","item":"lamp"},"dependsOn":["o7"]},{"id":"o7-ship","type":"ship-order","payload":{"orderId":"o7"},"dependsOn":["o7-pack-book","o7-pack-lamp"]}]}'
  curl -s ${url}/flows/order-7                     # o7 waits for the signal "payment", the rest for their parents
  curl -s -X POST ${url}/jobs/o7/signals/payment -H 'content-type: application/json' -d '{"payload":{"amount":42,"reference":"pay-1"}}'
  curl -s ${url}/flows/order-7                     # o7 sleeps 10 s, then the packs run, then o7-ship

Point other tools at it with:  export ORRERY_URL=${url}
Or the CLI (another terminal):  export ORRERY_URL=${url}; npx orrery watch "$(npx orrery enqueue flaky --payload '{"failTimes":2}' -q)"
Job state changes follow (Ctrl-C to stop):
`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping…`);
    await platform.stop();
    await aws.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
