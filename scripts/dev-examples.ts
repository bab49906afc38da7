/**
 * The composition examples `npm run dev` prints (scripts/dev.ts), as requests: an invoke and its
 * children, an event with two subscribers, an event waited for and the job that emits it, and a
 * batch handler. test/integration/dev-examples.test.ts sends these same requests to the dev
 * server and checks that each example's jobs succeed.
 */

/** One request of an example, as `curl` sends it. */
export interface DevRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /** What to look for in the answer (printed after the curl line). */
  note?: string;
}

export interface DevExample {
  /** What it shows (the heading line). */
  title: string;
  requests: DevRequest[];
  /** The jobs it makes that end `succeeded`, by id (the test waits for them). */
  succeeds: string[];
}

const signup = { userId: 'u7', email: 'u7@example.com' };

export const COMPOSITION_EXAMPLES: DevExample[] = [
  {
    title: 'Invoke (ctx.invoke): quote-order prices each item with a price-item job, and adds up their results',
    requests: [
      {
        method: 'POST',
        path: '/jobs',
        body: { id: 'quote-7', type: 'quote-order', payload: { orderId: 'o7', items: ['book', 'lamp', 'pen'] } },
      },
      { method: 'GET', path: '/jobs/quote-7', note: 'waiting for its 3 children, then succeeded: totalCents 1100' },
      { method: 'GET', path: '/jobs/quote-7/invoked', note: 'quote-7.price-0 … quote-7.price-2 and their states' },
    ],
    succeeds: ['quote-7', 'quote-7.price-0', 'quote-7.price-1', 'quote-7.price-2'],
  },
  {
    title: 'An event (POST /events) with two subscribers: user.signed-up makes a welcome-email and an account-sync job',
    requests: [
      { method: 'POST', path: '/events', body: { name: 'user.signed-up', id: 'signup-u7', data: signup } },
      { method: 'GET', path: '/events/signup-u7', note: 'its two jobs (the dashboard: #/events/signup-u7)' },
    ],
    succeeds: [],
  },
  {
    title: 'Wait for an event (ctx.waitForEvent) that another job sends (ctx.emit), matched on orderId',
    requests: [
      { method: 'POST', path: '/jobs', body: { id: 'parcel-o7', type: 'await-parcel', payload: { orderId: 'o7' } } },
      { method: 'GET', path: '/jobs/parcel-o7', note: 'waiting for parcel.shipped' },
      { method: 'POST', path: '/jobs', body: { id: 'ship-o7', type: 'ship-parcel', payload: { orderId: 'o7' } } },
      { method: 'GET', path: '/jobs/parcel-o7', note: 'succeeded: trackingId trk-o7' },
    ],
    succeeds: ['parcel-o7', 'ship-o7'],
  },
  {
    title: 'A batch handler (defineBatchJob): send-receipt gets up to 10 jobs per call, each with its own outcome',
    requests: [
      {
        method: 'POST',
        path: '/jobs/batch',
        body: {
          jobs: ['r1', 'r2', 'r3'].map((id) => ({
            id: `receipt-${id}`,
            type: 'send-receipt',
            payload: { orderId: id, email: `${id}@example.com` },
          })),
        },
      },
      { method: 'GET', path: '/jobs/receipt-r1', note: 'succeeded: batchOf says how many ran in its call' },
    ],
    succeeds: ['receipt-r1', 'receipt-r2', 'receipt-r3'],
  },
];

/** The jobs the event example makes are named by the API (ids derived from the event): the test reads them there. */
export const EVENT_EXAMPLE = { id: 'signup-u7', subscribers: ['account-sync', 'welcome-email'] };

/** `curl` lines of a request against `url`, the way scripts/dev.ts prints its other examples. */
export function curlLine(url: string, request: DevRequest): string {
  const body =
    request.body === undefined ? '' : ` -H 'content-type: application/json' -d '${JSON.stringify(request.body)}'`;
  const method = request.method === 'GET' ? '' : ` -X ${request.method}`;
  const note = request.note ? `   # ${request.note}` : '';
  return `  curl -s${method} ${url}${request.path}${body}${note}`;
}

/** The examples as the dev server prints them. */
export function compositionText(url: string): string {
  return COMPOSITION_EXAMPLES.map(
    (example) => `${example.title}:\n\n${example.requests.map((r) => curlLine(url, r)).join('\n')}`,
  ).join('\n\n');
}
