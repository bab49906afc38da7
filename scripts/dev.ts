/**
 * `npm run dev`: `orrery dev` on this repository's examples (orrery.config.ts lists them): local
 * AWS (DynamoDB Local, fauxqs SQS, the Scheduler stand-in) on 127.0.0.1, the API and the
 * dashboard on one port (the dashboard at `/ui/`, built from `ui/src` at start, in well under a
 * second), every job state change printed, handlers reloaded when their files change. Below the
 * URLs it prints requests to try on the examples. Ctrl-C stops everything.
 */
import { runDevLoop } from '../shared/cli/commands/dev';
import { buildUi, UI_DIST } from '../ui/build';
import { compositionText } from './dev-examples';

const port = Number(process.env.ORRERY_PORT ?? 4600);

function examples(url: string): string {
  return `
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

Composition (docs/workflows.md, docs/events.md):

${compositionText(url)}

Point other tools at it with:  export ORRERY_URL=${url}
Or the CLI (another terminal):  export ORRERY_URL=${url}; npx orrery watch "$(npx orrery enqueue flaky --payload '{"failTimes":2}' -q)"
Job state changes follow (Ctrl-C to stop):
`;
}

buildUi(UI_DIST);
runDevLoop({
  cwd: process.cwd(),
  config: 'orrery.config.ts',
  port,
  assetsDir: UI_DIST,
  color: process.stdout.isTTY,
  out: (line) => console.log(line),
  err: (line) => console.error(line),
  onStarted: (url) => console.log(examples(url)),
}).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
