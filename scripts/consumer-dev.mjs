// `orrery dev` in the consumer app, as its author runs it (its `npm run dev` is `orrery dev`), from
// scripts/consumer-app.sh with the app's directory as the working directory:
// 1. it starts, and prints its URL;
// 2. an `invoice` job enqueued through the dashboard's API (`/api/…`, as the UI calls it) succeeds;
// 3. a `collect-payment` job waits for its `paid` signal, a handler file is edited, the server
//    reloads, and the signal, sent after the reload, finishes the waiting job;
// 4. Ctrl-C (SIGINT) stops it with exit code 0.
// Any step that does not happen within its time fails the script (exit code 1), with the server's output.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';

const output = [];
// The bin itself rather than `npm run dev`: npm ends by re-raising a SIGINT, hiding orrery's exit code.
const server = spawn('node_modules/.bin/orrery', ['dev', '--port', '0'], {
  stdio: ['ignore', 'pipe', 'pipe'],
  detached: true, // its own process group, so a failure below can stop npm, orrery and the emulators
});
const waiters = [];
for (const stream of [server.stdout, server.stderr]) {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      output.push(line);
      for (const waiter of [...waiters]) waiter(line);
    }
  });
}
const exited = new Promise((resolve) => server.on('exit', (code, signal) => resolve({ code, signal })));

function fail(message) {
  console.error(`orrery dev: ${message}\n--- its output ---\n${output.join('\n')}`);
  try {
    process.kill(-server.pid, 'SIGKILL');
  } catch {}
  process.exit(1);
}

/** The first line (already printed, or printed within `ms`) that `test` matches. */
function line(test, what, ms = 60_000) {
  const seen = output.find((text) => test.test(text));
  if (seen) return Promise.resolve(seen);
  return new Promise((resolve) => {
    const timer = setTimeout(() => fail(`no line ${what} after ${ms} ms`), ms);
    const waiter = (text) => {
      if (!test.test(text)) return;
      clearTimeout(timer);
      waiters.splice(waiters.indexOf(waiter), 1);
      resolve(text);
    };
    waiters.push(waiter);
  });
}

const started = Date.now();
const url = (await line(/^\s+API\s+http:\/\/127\.0\.0\.1:\d+/, 'with the API URL', 120_000)).trim().split(/\s+/)[1];
await line(/^Watching \d+ file/, 'saying it watches the files');
console.log(`started in ${Date.now() - started} ms at ${url}`);

/** A call through the dashboard's API, with the header the UI sends on every call. */
async function api(path, body) {
  const response = await fetch(`${url}/api${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'x-orrery-dashboard': '1', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) fail(`${body === undefined ? 'GET' : 'POST'} /api${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

async function until(id, state, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = await api(`/jobs/${encodeURIComponent(id)}`);
    if (job.state === state) return job;
    if (Date.now() > deadline) fail(`job ${id} is ${job.state}, not ${state}, after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const invoice = await api('/jobs', {
  type: 'invoice',
  payload: { orderId: 'dev-1', currency: 'EUR', lines: [{ description: 'Tea', quantity: 2, unitCents: 450 }] },
});
const invoiced = await until(invoice.id, 'succeeded');
if (invoiced.result?.totalCents !== 900) fail(`the invoice's result is ${JSON.stringify(invoiced.result)}`);
console.log(`invoice ${invoice.id} succeeded: ${JSON.stringify(invoiced.result)}`);

const payment = await api('/jobs', {
  type: 'collect-payment',
  payload: { invoiceNumber: 'INV-dev-1', email: 'buyer@example.com', totalCents: 900 },
});
const waiting = await until(payment.id, 'waiting');
if (waiting.waitingFor?.key !== 'paid') fail(`collect-payment waits for ${JSON.stringify(waiting.waitingFor)}`);

appendFileSync('jobs/collect-payment.ts', '\n// edited while the server ran\n');
await line(/^reloaded after a change to .*collect-payment\.ts/, 'saying it reloaded after the edit', 30_000);
console.log('reloaded after an edit of jobs/collect-payment.ts');

await api(`/jobs/${encodeURIComponent(payment.id)}/signals/paid`, {
  payload: { amountCents: 900, reference: 'pi_dev' },
});
const paid = await until(payment.id, 'succeeded');
if (paid.result?.status !== 'paid' || paid.attempts !== 1) fail(`collect-payment ended ${JSON.stringify(paid)}`);
console.log(`collect-payment ${payment.id} waited through the reload and succeeded: ${JSON.stringify(paid.result)}`);

process.kill(-server.pid, 'SIGINT'); // as Ctrl-C does: to the whole foreground group
const stopped = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('timeout'), 30_000))]);
if (stopped === 'timeout') fail('did not stop within 30 s of SIGINT');
if (stopped.code !== 0) fail(`stopped with ${JSON.stringify(stopped)}, not exit code 0`);
await line(/^stopping/, 'saying it is stopping', 1_000);
try {
  process.kill(-server.pid, 0); // throws ESRCH when no process of its group is left
  fail('exited, but left processes of its group running (an emulator?)');
} catch (error) {
  if (error.code !== 'ESRCH') throw error;
}
console.log('stopped on SIGINT with exit code 0, and left no process running');
