/**
 * The dashboard in headless Chromium (Debian's `chromium`, driven by playwright-core; no browser
 * is downloaded) against the local platform, served as `npm run dev` serves it: `/ui/` and
 * `/api/` on the API's own port. Then the proxy mode (`orrery dashboard`'s server) in front of a
 * second platform whose Function URL takes only correctly signed requests, and its read-only
 * mode. Each view is screenshotted under test-results/ui/ and checked with axe-core.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as z from 'zod';
import { apiCall } from '../../functions/jobs/api-call';
import { echo } from '../../functions/jobs/echo';
import { priceItem } from '../../functions/jobs/price-item';
import { quoteOrder } from '../../functions/jobs/quote-order';
import { tenantSync } from '../../functions/jobs/tenant-sync';
import { welcomeEmail } from '../../functions/jobs/welcome-email';
import { defineJobType } from '../../shared/core/job-type';
import { createDashboardHandler, type DashboardServer, startDashboardServer } from '../../shared/dashboard/server';
import { defineJob } from '../../shared/runtime/define-job';
import { buildUi, UI_DIST } from '../../ui/build';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';

const CHROMIUM = process.env.ORRERY_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = join(process.cwd(), 'test-results', 'ui');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Ids whose attempts fail until the test takes them out. */
const broken = new Set<string>();
const fragileJob = defineJobType({
  type: 'fragile',
  payload: z.object({ label: z.string() }),
  timeoutMs: 10_000,
  retry: { maxAttempts: 1 },
});
const fragile = defineJob(fragileJob, async ({ label }, ctx) => {
  if (broken.has(ctx.jobId)) throw new Error(`fragile: ${label} is broken on purpose`);
  return { label, fixed: true };
});

let aws: LocalAws;
let platform: LocalPlatform;
let browser: Browser;
let context: BrowserContext;
let page: Page;

/** The few fields the test reads from API answers. */
interface ApiBody {
  id: string;
  state: string;
  nextFireAt: string | null;
  [field: string]: unknown;
}

/** Browser globals used inside page.evaluate (the test itself is type-checked without the DOM library). */
interface BrowserGlobals {
  document: unknown;
  axe: { run(context: unknown, options: unknown): Promise<{ violations: AxeViolation[] }> };
  scrollBy(x: number, y: number): void;
  requestAnimationFrame(callback: () => void): number;
}
interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  nodes: { target: string[] }[];
}

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: ApiBody }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

async function waitForState(id: string, state: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    last = (await call(platform.url, 'GET', `/jobs/${id}`)).json?.state;
    if (last === state) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`job ${id} did not reach ${state} in ${timeoutMs} ms (last: ${last})`);
}

/** Injects axe-core and fails on any serious or critical violation. */
async function expectAccessible(view: string): Promise<void> {
  await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(async () => {
    const browser = globalThis as unknown as BrowserGlobals;
    const result = await browser.axe.run(browser.document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')),
    }));
  });
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious, `${view}: ${JSON.stringify(serious, null, 2)}`).toEqual([]);
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  buildUi(UI_DIST); // the current sources, as `npm run dev` does
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  let apiUrl = '';
  const dashboard = createDashboardHandler({ upstream: () => apiUrl, assetsDir: UI_DIST, pollMs: 500 });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('ui'),
    // api-call has a throttle (5 a second per API key, bursts of 5), welcome-email a rate limit (1 an hour per user)
    // quote-order invokes price-item jobs (ctx.invoke); welcome-email subscribes to user.signed-up
    jobs: [echo, fragile, tenantSync, apiCall, welcomeEmail, quoteOrder, priceItem],
    functionUrl: { fallback: dashboard },
  });
  apiUrl = platform.url;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  // bypassCSP: only so the test can inject axe-core as an inline script; the app itself runs under its CSP
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, bypassCSP: true });
  page = await context.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
});

afterAll(async () => {
  await browser?.close();
  await platform?.stop();
  await aws?.stop();
});

describe('the dashboard on the local platform (as npm run dev serves it)', () => {
  const ids: string[] = [];

  it('loads the overview', async () => {
    for (let i = 0; i < 3; i++) {
      const id = `${uniquePrefix('broken')}-${i}`;
      broken.add(id);
      ids.push(id);
      expect(
        (await call(platform.url, 'POST', '/jobs', { id, type: 'fragile', payload: { label: `batch-${i}` } })).status,
      ).toBe(201);
    }
    const ok = await call(platform.url, 'POST', '/jobs', { type: 'echo', payload: { hello: 'world' } });
    for (const id of ids) await waitForState(id, 'failed');
    await waitForState(ok.json.id, 'succeeded');

    await page.goto(`${platform.url}/ui/`);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const table = page.locator('main table');
    await table.getByRole('link', { name: 'fragile', exact: true }).waitFor();
    await expect(table.getByRole('link', { name: 'echo', exact: true }).count()).resolves.toBe(1);
    await shot('overview');
    await expectAccessible('overview');
  });

  it('filters to failed jobs, opens one, shows its error, retries it and shows it succeed', async () => {
    await page.getByRole('link', { name: 'Jobs', exact: true }).click();
    await page.getByLabel('Type', { exact: true }).selectOption('fragile');
    await page.getByLabel('State', { exact: true }).selectOption('failed');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/#\/jobs\?type=fragile&state=failed$/);
    // the filtered rows: the table may still show the unfiltered list, or be loading, for a moment
    await expect.poll(() => page.locator('table.jobs tbody tr').count(), { timeout: 10_000 }).toBe(3);
    for (const id of ids) await page.locator('table.jobs').getByRole('link', { name: id }).waitFor();
    await shot('jobs');
    await expectAccessible('jobs');

    // the filtered view is an address that can be shared: a fresh page shows the same rows
    const shared = await context.newPage();
    await shared.goto(page.url());
    await shared.getByRole('link', { name: ids[0] as string }).waitFor();
    await shared.close();

    const id = ids[0] as string;
    await page.getByRole('link', { name: id }).click();
    await page.getByRole('heading', { name: `Job ${id} failed` }).waitFor();
    const timeline = page.getByRole('list', { name: 'attempts' });
    await expect(timeline.textContent()).resolves.toContain(
      'attempt 1 failed (error): Error: fragile: batch-0 is broken on purpose',
    );
    await timeline.getByText('Stack').click();
    await expect(timeline.locator('pre.stack').textContent()).resolves.toContain('dashboard.test.ts');
    await shot('job-failed');
    await expectAccessible('job detail');

    broken.delete(id);
    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor({ timeout: 30_000 });
    await expect(page.getByLabel('result').textContent()).resolves.toContain('"fixed": true');
    await expect(timeline.textContent()).resolves.toMatch(/succeeded on attempt 1/);
    await shot('job-succeeded');
  });

  it('retries every failed job of a filter in bulk, after a confirmation that states the count', async () => {
    const rest = ids.slice(1);
    for (const id of rest) broken.delete(id);
    await page.goto(`${platform.url}/ui/#/jobs?type=fragile&state=failed`);
    for (const id of rest) await page.getByRole('link', { name: id }).waitFor();
    await page.getByRole('button', { name: 'Retry all matching…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Retry 2 jobs?' });
    await dialog.waitFor();
    await shot('bulk-confirm');
    await expectAccessible('bulk confirmation');
    // keyboard: the modal takes focus on its first button, the one that confirms
    await expect(
      dialog
        .getByRole('button', { name: 'Retry 2' })
        .evaluate((button) => button === button.ownerDocument.activeElement),
    ).resolves.toBe(true);
    await page.keyboard.press('Enter');
    await page.getByText(/Retry: 2 applied, 0 refused/).waitFor({ timeout: 20_000 });
    for (const id of rest) await waitForState(id, 'succeeded');
    // live updates: the failed list empties by itself
    await page.getByText('No jobs match these filters.').waitFor({ timeout: 10_000 });

    // search by a payload field, through the form: one of the three matches
    await page.getByLabel('State', { exact: true }).selectOption('');
    await page.getByLabel('Payload field 1', { exact: true }).fill('label');
    await page.getByLabel('Value of payload field 1', { exact: true }).fill('batch-1');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/#\/jobs\?type=fragile&payload\.label=batch-1$/);
    await page.getByRole('link', { name: ids[1] as string }).waitFor();
    await expect(page.locator('table.jobs tbody tr').count()).resolves.toBe(1);
  });

  it('pauses a schedule and shows its next fire time', async () => {
    const name = uniquePrefix('nightly');
    const created = await call(platform.url, 'POST', '/schedules', {
      name,
      type: 'echo',
      payload: { from: 'schedule' },
      cron: '0 3 * * *',
    });
    expect(created.status).toBe(201);
    await page.getByRole('link', { name: 'Schedules', exact: true }).click();
    const row = page.locator(`tr[data-schedule="${name}"]`);
    await row.waitFor();
    await expect(row.locator('td.next-fire time').getAttribute('datetime')).resolves.toBe(created.json.nextFireAt);
    await expect(row.textContent()).resolves.toContain('enabled');
    await shot('schedules');
    await expectAccessible('schedules');
    await row.getByRole('button', { name: `Pause ${name}` }).click();
    await row.getByRole('button', { name: `Resume ${name}` }).waitFor();
    await expect(row.textContent()).resolves.toContain('paused');
    expect((await call(platform.url, 'GET', `/schedules/${name}`)).json.state).toBe('paused');
    // who paused it: `npm run dev` takes unsigned calls, so no one in particular (a signed pause: below)
    await expect(row.locator('.changed-by').textContent()).resolves.toMatch(/^\s*paused by anonymous /);

    // run now (a paused schedule can be run): the new job names its schedule
    await row.getByRole('button', { name: `Run now ${name}` }).click();
    const started = page.getByRole('status').filter({ hasText: `Started a run of ${name}` });
    await started.getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: /^Job .* succeeded$/ }).waitFor({ timeout: 30_000 });
    await expect(page.getByRole('link', { name, exact: true }).count()).resolves.toBe(1);
  });

  it('redrives a DLQ', async () => {
    const job = await call(platform.url, 'POST', '/jobs', { type: 'echo', payload: { n: 1 } });
    await waitForState(job.json.id, 'succeeded');
    const queues = platform.deployment.queues.echo;
    if (!queues) throw new Error('no echo queues');
    // a duplicate of the job's message, dead-lettered: redriving it must not run the job again
    await platform.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: queues.dlqUrl,
        MessageBody: JSON.stringify({ v: 1, id: job.json.id, type: 'echo' }),
      }),
    );
    await page.goto(`${platform.url}/ui/#/dlq?type=echo`);
    await page.getByRole('link', { name: job.json.id }).waitFor();
    await expect(page.getByTestId('dlq-depth').textContent()).resolves.toBe('1');
    // never redriven: no line for it
    await expect(page.locator('.last-redrive').count()).resolves.toBe(0);
    await shot('dlq');
    await expectAccessible('dlq');
    // Escape cancels the confirmation and nothing moves; then confirm for real
    await page.getByRole('button', { name: 'Redrive…' }).click();
    await page.getByRole('dialog', { name: 'Redrive about 1 message?' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await expect(page.getByTestId('dlq-depth').textContent()).resolves.toBe('1');
    await page.getByRole('button', { name: 'Redrive…' }).click();
    await page
      .getByRole('dialog', { name: 'Redrive about 1 message?' })
      .getByRole('button', { name: 'Redrive' })
      .click();
    await page.getByText(/Moved 1 messages back to the echo ready queue/).waitFor();
    await page.getByText('The echo DLQ is empty.').waitFor();
    // this platform takes unsigned calls: the redrive's caller is anonymous
    await expect(page.locator('.last-redrive').textContent()).resolves.toMatch(
      /^Last redriven by anonymous at .+ \(1 moved\)\.$/,
    );
    const after = await call(platform.url, 'GET', `/jobs/${job.json.id}`);
    expect(after.json).toMatchObject({ state: 'succeeded', attempts: 1 });
  });

  it("shows who holds a flow-control key's slots and how many wait", async () => {
    const tenant = uniquePrefix('tenant');
    const jobs = [];
    for (let i = 0; i < 3; i++) {
      jobs.push(
        (await call(platform.url, 'POST', '/jobs', { type: 'tenant-sync', payload: { tenantId: tenant, ms: 8_000 } }))
          .json,
      );
    }
    const first = jobs[0] as ApiBody;
    await waitForState(first.id, 'running');
    await page.goto(`${platform.url}/ui/#/jobs/${first.id}`);
    await page.getByRole('heading', { name: `Job ${first.id} running` }).waitFor();
    // the job names its tenant for both limits: the cap per tenant, and its share of the fair one
    await page.getByRole('link', { name: tenant, exact: true }).first().click();
    await page.waitForURL(/#\/keys\?type=tenant-sync&key=/);
    const limits = page.getByRole('table', { name: 'Concurrency limits' });
    // the limit is 2 per tenant: two hold a slot, the third waits, and is next in line
    await limits.getByText('#1: 2 of 2').waitFor({ timeout: 20_000 });
    const perTenant = limits.locator('tbody tr').first();
    await expect(perTenant.locator('td.num').textContent()).resolves.toBe('1');
    await expect(perTenant.locator('td').nth(3).getByRole('link').count()).resolves.toBe(2);
    await expect(perTenant.locator('td').nth(5).getByRole('link').textContent()).resolves.toBe((jobs[2] as ApiBody).id);
    await shot('keys');
    await expectAccessible('keys');
  });

  it("lists a type's fair keys with their shares, and sets and removes a key's weight at run time", async () => {
    const [a, b] = [uniquePrefix('fair-a'), uniquePrefix('fair-b')];
    const jobs = [];
    for (const tenantId of [a, a, a, b]) {
      jobs.push(
        (await call(platform.url, 'POST', '/jobs', { type: 'tenant-sync', payload: { tenantId, ms: 8_000 } })).json,
      );
    }
    await waitForState((jobs[0] as ApiBody).id, 'running');
    await page.goto(`${platform.url}/ui/#/keys?type=tenant-sync`);
    const fair = page.getByRole('table', { name: /Limit #2: .* shared fairly/ });
    await fair.getByRole('link', { name: a, exact: true }).waitFor({ timeout: 20_000 });
    await fair.getByRole('link', { name: a, exact: true }).click();
    await page.waitForURL(/#\/keys\?type=tenant-sync&key=/);
    await page.getByRole('heading', { name: 'Fair share' }).waitFor();
    await page.getByLabel('Weight in fair share').fill('3');
    await page.getByRole('button', { name: 'Set' }).click();
    await page.getByRole('status').filter({ hasText: 'Limits set.' }).waitFor();
    await page.getByText('(set at run time)').waitFor();
    const state = await call(platform.url, 'GET', `/types/tenant-sync/keys/${encodeURIComponent(a)}`);
    expect((state.json as unknown as { limits: { fair?: unknown }[] }).limits[1]?.fair).toMatchObject({
      key: a,
      weight: 3,
      weightSource: 'runtime',
    });
    await shot('keys-fair');
    await expectAccessible('keys-fair');
    await page.getByRole('button', { name: 'Remove weight' }).click();
    await page.getByRole('status').filter({ hasText: 'Weight removed.' }).waitFor();
    const after = await call(platform.url, 'GET', `/types/tenant-sync/keys/${encodeURIComponent(a)}`);
    expect((after.json as unknown as { limits: { fair?: unknown }[] }).limits[1]?.fair).toMatchObject({
      weight: 1,
      weightSource: 'spec',
    });
  });

  it("sets a key's throttle at run time, refuses a bad one, and removes it", async () => {
    const apiKey = uniquePrefix('api-key');
    const keyPath = `/types/api-call/keys/${encodeURIComponent(apiKey)}`;
    const paceOf = async (what: 'throttle' | 'rateLimit', path = keyPath) =>
      (await call(platform.url, 'GET', path)).json[what] as Record<string, unknown>;
    await page.goto(`${platform.url}/ui/#/keys?type=api-call&key=${encodeURIComponent(apiKey)}`);
    const throttle = page.getByRole('region', { name: 'Throttle' });
    await throttle.getByText('5 per 1 s, bursts of 5').waitFor();
    await expect(throttle.locator('dd').nth(2).textContent()).resolves.toBe('spec');
    // the type has no rate limit: no form for one
    await expect(page.getByRole('form', { name: "Change this key's rate limit" }).count()).resolves.toBe(0);

    const form = page.getByRole('form', { name: "Change this key's throttle" });
    await form.getByLabel('Throttle limit').fill('2');
    await form.getByLabel('Throttle period (seconds)').fill('10');
    await form.getByLabel('Throttle burst').fill('1');
    await form.getByRole('button', { name: 'Set throttle' }).click();
    await form.getByRole('status').filter({ hasText: 'Throttle set.' }).waitFor();
    await throttle.getByText('2 per 10 s, bursts of 1').waitFor();
    await expect(throttle.locator('dd').nth(2).textContent()).resolves.toMatch(
      /^set at run time by anonymous .+; spec 5 per 1 s$/,
    );
    const set = await paceOf('throttle');
    expect(set).toMatchObject({
      key: apiKey,
      limit: 2,
      periodSeconds: 10,
      burst: 1,
      source: 'runtime',
      setBy: 'anonymous',
      specLimit: 5,
    });
    await shot('keys-throttle');
    await expectAccessible('keys-throttle');

    // a limit of 0: the API's 400 names the field, beside the form, and nothing is written
    await form.getByLabel('Throttle limit').fill('0');
    await form.getByRole('button', { name: 'Set throttle' }).click();
    const refused = form.getByRole('alert');
    await refused.waitFor();
    await expect(refused.textContent()).resolves.toContain(
      'invalid_limits: these limits cannot be set: throttle limit must be an integer from 1 to 10000',
    );
    await expect(form.getByLabel('Throttle limit').getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(form.getByLabel('Throttle period (seconds)').getAttribute('aria-invalid')).resolves.toBeNull();
    await shot('keys-throttle-refused');
    await expectAccessible('keys-throttle-refused');
    expect(await paceOf('throttle')).toMatchObject({ limit: 2, periodSeconds: 10, setAt: set.setAt });
    await expect(throttle.getByText('2 per 10 s, bursts of 1').count()).resolves.toBe(1);

    await form.getByRole('button', { name: 'Remove run-time throttle' }).click();
    await form.getByRole('status').filter({ hasText: 'Run-time throttle removed.' }).waitFor();
    await throttle.getByText('5 per 1 s, bursts of 5').waitFor();
    await expect(throttle.locator('dd').nth(2).textContent()).resolves.toBe('spec');
    await expect(form.getByRole('alert').count()).resolves.toBe(0);
    await expect(form.getByRole('button', { name: 'Remove run-time throttle' }).count()).resolves.toBe(0);
    expect(await paceOf('throttle')).toMatchObject({ limit: 5, periodSeconds: 1, burst: 5, source: 'spec' });

    // a rate limit's form has no burst, and a type without a throttle shows no throttle form
    const user = uniquePrefix('user');
    const userPath = `/types/welcome-email/keys/${encodeURIComponent(user)}`;
    await page.goto(`${platform.url}/ui/#/keys?type=welcome-email&key=${encodeURIComponent(user)}`);
    const rate = page.getByRole('form', { name: "Change this key's rate limit" });
    await page.getByRole('region', { name: 'Rate limit' }).getByText('1 per 3600 s').waitFor();
    await expect(rate.getByLabel('Rate limit burst').count()).resolves.toBe(0);
    await expect(page.getByRole('form', { name: "Change this key's throttle" }).count()).resolves.toBe(0);
    await rate.getByLabel('Rate limit limit').fill('3');
    await rate.getByLabel('Rate limit period (seconds)').fill('60');
    await rate.getByRole('button', { name: 'Set rate limit' }).click();
    await page.getByRole('region', { name: 'Rate limit' }).getByText('3 per 60 s').waitFor();
    expect(await paceOf('rateLimit', userPath)).toMatchObject({ limit: 3, periodSeconds: 60, source: 'runtime' });
    await expectAccessible('keys-rate-limit');
    await rate.getByRole('button', { name: 'Remove run-time rate limit' }).click();
    await page.getByRole('region', { name: 'Rate limit' }).getByText('1 per 3600 s').waitFor();
    expect(await paceOf('rateLimit', userPath)).toMatchObject({ limit: 1, periodSeconds: 3600, source: 'spec' });
  });

  it("links a flow job's parents and children", async () => {
    const [a, b] = [uniquePrefix('flow-a'), uniquePrefix('flow-b')];
    const created = await call(platform.url, 'POST', '/flows', {
      jobs: [
        { id: a, type: 'echo', payload: { step: 'a' } },
        { id: b, type: 'echo', payload: { step: 'b' }, dependsOn: [{ id: a, onParentFailure: 'ignore' }] },
      ],
    });
    expect(created.status).toBe(201);
    await waitForState(b, 'succeeded');
    await page.goto(`${platform.url}/ui/#/jobs/${encodeURIComponent(b)}`);
    await page.getByRole('heading', { name: `Job ${b} succeeded` }).waitFor();
    await expect(page.locator('dd', { hasText: a }).textContent()).resolves.toContain('(if it fails: ignore)');
    await page.getByRole('link', { name: a, exact: true }).click();
    await page.getByRole('heading', { name: `Job ${a} succeeded` }).waitFor();
    await page.getByRole('link', { name: b, exact: true }).waitFor();
    await expectAccessible('job with children');
  });

  it('links a job that invoked others to each of them, and each back to it', async () => {
    const id = uniquePrefix('quote');
    const quote = { id, type: 'quote-order', payload: { orderId: 'o1', items: ['book', 'pen'] } };
    expect((await call(platform.url, 'POST', '/jobs', quote)).status).toBe(201);
    await waitForState(id, 'succeeded');
    await page.goto(`${platform.url}/ui/#/jobs/${encodeURIComponent(id)}`);
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor();
    const invoked = page.getByRole('table', { name: 'Invoked jobs' });
    await invoked.getByRole('link', { name: `${id}.price-1`, exact: true }).waitFor();
    const rows = await invoked.locator('tbody tr').allTextContents();
    expect(rows).toEqual([`price-0${id}.price-0price-itemsucceeded`, `price-1${id}.price-1price-itemsucceeded`]);
    await shot('job-invoked');
    await expectAccessible('job with invoked jobs');

    await invoked.getByRole('link', { name: `${id}.price-1`, exact: true }).click();
    await page.getByRole('heading', { name: `Job ${id}.price-1 succeeded` }).waitFor();
    // the invoking job is named as such, not as a child (the registry's edge back to it); the
    // details may come after the heading (the page can open on what the list knew of the job)
    await page.locator('dt', { hasText: 'Invoked by' }).waitFor();
    await expect(page.locator('dt', { hasText: 'Invoked by' }).count()).resolves.toBe(1);
    await expect(page.locator('dt', { hasText: 'Children' }).count()).resolves.toBe(0);
    await expectAccessible('invoked job');
    await page.getByRole('link', { name: id, exact: true }).click();
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor();
  });

  it("opens an event by its id from the jobs view, and links the event's jobs", async () => {
    const eventId = uniquePrefix('signup');
    const sent = await call(platform.url, 'POST', '/events', {
      name: 'user.signed-up',
      id: eventId,
      data: { userId: eventId, email: `${eventId}@example.com` },
    });
    expect(sent.status).toBe(200);
    const jobId = (sent.json.jobs as { id: string; type: string }[])[0]?.id as string;
    await waitForState(jobId, 'succeeded');

    await page.goto(`${platform.url}/ui/#/jobs`);
    const lookup = page.getByRole('form', { name: 'Open an event by id' });
    await lookup.getByLabel('Event id').fill(eventId);
    await lookup.getByRole('button', { name: 'Open' }).click();
    await page.getByRole('heading', { name: `Event ${eventId}` }).waitFor();
    const table = page.getByRole('table', { name: 'Jobs the event made' });
    await table.getByRole('link', { name: jobId, exact: true }).waitFor();
    await expect(table.locator('tbody tr').allTextContents()).resolves.toEqual([
      expect.stringMatching(new RegExp(`^user\\.signed-upwelcome-email${jobId.replace('.', '\\.')}succeeded`)),
    ]);
    await shot('event');
    await expectAccessible('event');

    await table.getByRole('link', { name: jobId, exact: true }).click();
    await page.getByRole('heading', { name: `Job ${jobId} succeeded` }).waitFor();
    // a job an event made does not know the event's id: it leads to the lookup
    await page.getByRole('link', { name: 'open the event by its id' }).click();
    await page.getByRole('heading', { name: 'Events', exact: true }).waitFor();
    await page.goto(`${platform.url}/ui/#/events/no-such-event`);
    await page.getByRole('alert').getByText('No event no-such-event').waitFor();
  });

  it('shows the overview of a busier hour', async () => {
    for (let i = 0; i < 12; i++) await call(platform.url, 'POST', '/jobs', { type: 'echo', payload: { n: i } });
    const failing = [`${uniquePrefix('late')}-a`, `${uniquePrefix('late')}-b`];
    for (const id of failing) {
      broken.add(id);
      await call(platform.url, 'POST', '/jobs', { id, type: 'fragile', payload: { label: id } });
    }
    for (const id of failing) await waitForState(id, 'failed');
    await page.goto(`${platform.url}/ui/`);
    const overview = page.locator('main table');
    await overview.getByRole('link', { name: 'tenant-sync', exact: true }).waitFor();
    // the first three fragile jobs failed, and were retried to success: counted by their state now
    const fragileRow = overview.locator('tr', { has: page.getByRole('link', { name: 'fragile', exact: true }) });
    await fragileRow.getByRole('img', { name: /: 5 created, 3 succeeded, 2 failed$/ }).waitFor({ timeout: 10_000 });
    await fragileRow.getByRole('link', { name: '3 succeeded fragile jobs' }).waitFor();
    await fragileRow.getByRole('link', { name: '2 failed fragile jobs' }).waitFor();
    await fragileRow.getByText('40.0% failure').waitFor();
    await shot('overview-busy');
    // the README's picture: the top of the page only
    await page.setViewportSize({ width: 1280, height: 400 });
    await page.screenshot({ path: join(SHOTS, 'overview-readme.png') });
    await page.setViewportSize({ width: 1280, height: 860 });
    await expectAccessible('overview');
  });

  it('keeps a table of 1,000 rows responsive', async () => {
    // 10 pages of 100 synthetic jobs, answered by the browser itself: this measures the UI only
    const now = Date.now();
    await page.route(/\/api\/jobs\?/, async (route) => {
      const url = new URL(route.request().url());
      const pageNo = Number(url.searchParams.get('cursor') ?? '0');
      const items = Array.from({ length: 100 }, (_, i) => {
        const n = pageNo * 100 + i;
        const at = new Date(now - n * 1000).toISOString();
        return {
          id: `job-${String(n).padStart(4, '0')}`,
          type: 'echo',
          state: n % 7 === 0 ? 'failed' : 'succeeded',
          createdAt: at,
          runAt: at,
          attempts: 1,
          finishedAt: at,
        };
      });
      await route.fulfill({ json: { items, nextCursor: pageNo < 9 ? String(pageNo + 1) : null } });
    });
    await page.goto(`${platform.url}/ui/#/jobs?type=echo&view=big`);
    await page.getByRole('link', { name: 'job-0099' }).waitFor();
    await page.getByRole('button', { name: /Load all/ }).click();
    await page.getByTestId('row-count').filter({ hasText: '1000 of 1000 loaded' }).waitFor();
    await expect(page.locator('table.jobs tbody tr').count()).resolves.toBe(1000);

    // typing into the row finder filters 1,000 rows; each keystroke must be handled promptly
    const finder = page.getByRole('searchbox', { name: 'Find in loaded rows' });
    const started = Date.now();
    await finder.fill('job-0999');
    await page.getByTestId('row-count').filter({ hasText: '1 of 1000 loaded' }).waitFor();
    const filterMs = Date.now() - started;
    await finder.fill('');
    await page.getByTestId('row-count').filter({ hasText: '1000 of 1000 loaded' }).waitFor();
    // a long task blocks input: measure the slowest frame gap while scrolling the whole table
    const worstFrameMs = await page.evaluate(async () => {
      const window = globalThis as unknown as BrowserGlobals;
      const requestAnimationFrame = (callback: () => void) => window.requestAnimationFrame(callback);
      // let the 1,000 rows shown again settle (layout and paint) before measuring
      await new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve())));
      let worst = 0;
      let last = performance.now();
      let frames = 0;
      await new Promise<void>((resolve) => {
        const tick = () => {
          const t = performance.now();
          worst = Math.max(worst, t - last);
          last = t;
          window.scrollBy(0, 400);
          if (++frames < 60) requestAnimationFrame(tick);
          else resolve();
        };
        requestAnimationFrame(tick);
      });
      return worst;
    });
    console.log(`1,000 rows: filter ${filterMs} ms, worst frame while scrolling ${worstFrameMs.toFixed(0)} ms`);
    // printed, not asserted: timings are the benchmark's business, and this machine is shared
    // with the platform under test; the test asserts that filtering, scrolling and a click work
    await page.getByRole('link', { name: 'job-0500' }).click();
    await page.waitForURL(/#\/jobs\/job-0500$/);
    await page.unroute(/\/api\/jobs\?/);
  });
});

describe('orrery dashboard: the proxy in front of an API that takes signed requests only', () => {
  let signed: LocalPlatform;
  let proxy: DashboardServer;
  let readOnly: DashboardServer;

  beforeAll(async () => {
    signed = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('ui-signed'),
      jobs: [echo, apiCall, quoteOrder, priceItem, welcomeEmail],
      // the signature is checked against the local credentials the default chain finds in the environment
      functionUrl: {
        authType: 'AWS_IAM',
        secrets: { [process.env.AWS_ACCESS_KEY_ID ?? 'local']: process.env.AWS_SECRET_ACCESS_KEY ?? 'local' },
      },
    });
    proxy = await startDashboardServer({
      upstream: signed.url,
      sign: 'always',
      port: 0,
      assetsDir: UI_DIST,
      pollMs: 500,
    });
    readOnly = await startDashboardServer({
      upstream: signed.url,
      sign: 'always',
      readOnly: true,
      port: 0,
      assetsDir: UI_DIST,
    });
  });

  afterAll(async () => {
    await readOnly?.stop();
    await proxy?.stop();
    await signed?.stop();
  });

  it('the API refuses unsigned and wrongly signed requests', async () => {
    expect((await call(signed.url, 'GET', '/jobs')).status).toBe(403);
    const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
    const forged = await fetch(`${signed.url}/jobs`, {
      headers: {
        authorization: `AWS4-HMAC-SHA256 Credential=${process.env.AWS_ACCESS_KEY_ID}/${amzDate.slice(0, 8)}/us-east-1/lambda/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`,
        'x-amz-date': amzDate,
      },
    });
    expect(forged.status).toBe(403);
    expect(await forged.json()).toEqual({ Message: expect.stringMatching(/signature we calculated does not match/) });
  });

  it('lists and opens jobs through the signing proxy', async () => {
    // same origin as the dashboard: a page on another origin could not send the dashboard header
    await page.goto(proxy.uiUrl);
    const enqueued = await page.evaluate(async (url) => {
      const response = await fetch(`${url}/api/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-orrery-dashboard': '1' },
        body: JSON.stringify({ type: 'echo', payload: { via: 'proxy' } }),
      });
      return { status: response.status, job: (await response.json()) as { id: string } };
    }, proxy.url);
    expect(enqueued.status).toBe(201);
    const id = enqueued.job.id as string;

    await page.goto(`${proxy.uiUrl}#/jobs?type=echo`);
    await page.getByRole('link', { name: id }).click();
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor({ timeout: 30_000 });
    await expect(page.getByLabel('payload').textContent()).resolves.toContain('"via": "proxy"');
    await shot('proxy-job');
  });

  it('read-only mode hides the actions and the server refuses a retry', async () => {
    const job = (await page.evaluate(async (url) => {
      const response = await fetch(`${url}/api/jobs?type=echo&limit=1`, { headers: { 'x-orrery-dashboard': '1' } });
      return response.json();
    }, proxy.url)) as { items: { id: string }[] };
    const id = job.items[0]?.id as string;
    await page.goto(`${readOnly.uiUrl}#/jobs/${id}`);
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor();
    await page.getByText('read-only', { exact: true }).waitFor();
    await expect(page.getByRole('button', { name: 'Retry', exact: true }).count()).resolves.toBe(0);
    await page.goto(`${readOnly.uiUrl}#/jobs?type=echo`);
    await page.getByRole('link', { name: id }).waitFor();
    await expect(page.getByRole('button', { name: 'Retry all matching…' }).count()).resolves.toBe(0);
    await shot('read-only');
    // a key's throttle is shown, but not the form that changes it
    await page.goto(`${readOnly.uiUrl}#/keys?type=api-call&key=k1`);
    await page.getByRole('region', { name: 'Throttle' }).getByText('5 per 1 s, bursts of 5').waitFor();
    await expect(page.getByRole('form', { name: "Change this key's throttle" }).count()).resolves.toBe(0);
    await expect(page.getByRole('button', { name: 'Set throttle' }).count()).resolves.toBe(0);
    await expectAccessible('keys read-only');
    const refused = await page.evaluate(
      async ({ url, jobId }) => {
        const response = await fetch(`${url}/api/jobs/${jobId}/retry`, {
          method: 'POST',
          headers: { 'x-orrery-dashboard': '1' },
        });
        return { status: response.status, body: await response.json() };
      },
      { url: readOnly.url, jobId: id },
    );
    expect(refused).toMatchObject({ status: 403, body: { error: { code: 'read_only' } } });
  });

  it("read-only mode shows a job's invoked jobs and an event's jobs", async () => {
    const id = uniquePrefix('ro-quote');
    const eventId = uniquePrefix('ro-signup');
    await page.goto(proxy.uiUrl);
    const sent = await page.evaluate(
      async ({ url, id, eventId }) => {
        const post = (path: string, body: unknown) =>
          fetch(`${url}/api${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-orrery-dashboard': '1' },
            body: JSON.stringify(body),
          }).then(async (r) => ({ status: r.status, body: await r.json() }));
        return [
          await post('/jobs', { id, type: 'quote-order', payload: { orderId: 'o2', items: ['lamp'] } }),
          await post('/events', { name: 'user.signed-up', id: eventId, data: { userId: eventId, email: 'a@b.c' } }),
        ];
      },
      { url: proxy.url, id, eventId },
    );
    expect(sent.map((answer) => answer.status)).toEqual([201, 200]);

    await page.goto(`${readOnly.uiUrl}#/jobs/${id}`);
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor({ timeout: 30_000 });
    await page.getByText('read-only', { exact: true }).waitFor();
    const invoked = page.getByRole('table', { name: 'Invoked jobs' });
    await invoked.getByRole('link', { name: `${id}.price-0`, exact: true }).click();
    await page.getByRole('heading', { name: `Job ${id}.price-0 succeeded` }).waitFor();
    await page.getByRole('link', { name: id, exact: true }).waitFor();

    await page.goto(`${readOnly.uiUrl}#/events/${eventId}`);
    const made = page.getByRole('table', { name: 'Jobs the event made' });
    await made.getByRole('cell', { name: 'welcome-email' }).waitFor();
    await expectAccessible('event read-only');
  });

  it('cancels a job as the signing principal and shows who did it, in the details and the timeline', async () => {
    await page.goto(proxy.uiUrl);
    const enqueued = await page.evaluate(async (url) => {
      const response = await fetch(`${url}/api/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-orrery-dashboard': '1' },
        body: JSON.stringify({ type: 'echo', payload: { via: 'audit' }, delaySeconds: 3600 }),
      });
      return { status: response.status, job: (await response.json()) as { id: string } };
    }, proxy.url);
    expect(enqueued.status).toBe(201);
    const id = enqueued.job.id as string;
    // the proxy signs with the default local credentials: arn:aws:iam::000000000000:user/local
    const local = 'arn:aws:iam::000000000000:user/local';

    await page.goto(`${proxy.uiUrl}#/jobs/${id}`);
    await page.getByRole('heading', { name: new RegExp(`^Job ${id} scheduled`) }).waitFor();
    const details = page.locator('dl.facts');
    await expect(details.textContent()).resolves.toContain('Enqueued byuser/local');
    await page.getByRole('button', { name: 'Cancel…' }).click();
    await page.getByRole('dialog', { name: 'Cancel 1 job?' }).getByRole('button', { name: 'Cancel the job' }).click();
    await page.getByRole('heading', { name: `Job ${id} cancelled` }).waitFor({ timeout: 20_000 });
    const action = page.getByRole('list', { name: 'attempts' }).locator('li.operator-action');
    await expect(action.textContent()).resolves.toMatch(/^cancelled by user\/local at /);
    await expect(action.locator('.who').getAttribute('title')).resolves.toBe(local);
    await shot('job-cancelled-by');
    await expectAccessible('job cancelled by');
  });

  it('pauses a schedule as the signing principal and shows who did it', async () => {
    const name = uniquePrefix('audited');
    await page.goto(proxy.uiUrl);
    const created = await page.evaluate(
      async ({ url, name }) => {
        const response = await fetch(`${url}/api/schedules`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-orrery-dashboard': '1' },
          body: JSON.stringify({ name, type: 'echo', payload: {}, cron: '0 3 * * *' }),
        });
        return response.status;
      },
      { url: proxy.url, name },
    );
    expect(created).toBe(201);
    await page.goto(`${proxy.uiUrl}#/schedules`);
    const row = page.locator(`tr[data-schedule="${name}"]`);
    await row.waitFor();
    await expect(row.locator('.changed-by').textContent()).resolves.toMatch(/^\s*created by user\/local /);
    await row.getByRole('button', { name: `Pause ${name}` }).click();
    await row.getByRole('button', { name: `Resume ${name}` }).waitFor();
    const changed = row.locator('.changed-by');
    await expect(changed.textContent()).resolves.toMatch(/^\s*paused by user\/local /);
    await expect(changed.locator('.who').getAttribute('title')).resolves.toBe('arn:aws:iam::000000000000:user/local');
    await expectAccessible('schedule paused by');
  });

  it('redrives a DLQ as the signing principal and shows who did it last', async () => {
    const queues = signed.deployment.queues.echo;
    if (!queues) throw new Error('no echo queues');
    // a dead letter of a job that does not exist: redriven, the worker drops it
    await signed.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: queues.dlqUrl,
        MessageBody: JSON.stringify({ v: 1, id: `dead-${Date.now()}`, type: 'echo' }),
      }),
    );
    const local = 'arn:aws:iam::000000000000:user/local';
    await page.goto(`${proxy.uiUrl}#/dlq?type=echo`);
    await page.getByTestId('dlq-depth').filter({ hasText: /^1$/ }).waitFor();
    await page.getByRole('button', { name: 'Redrive…' }).click();
    await page
      .getByRole('dialog', { name: 'Redrive about 1 message?' })
      .getByRole('button', { name: 'Redrive' })
      .click();
    await page.getByText(/Moved 1 messages back to the echo ready queue/).waitFor();
    const last = page.locator('.last-redrive');
    await expect(last.textContent()).resolves.toMatch(/^Last redriven by user\/local at .+ \(1 moved\)\.$/);
    await expect(last.locator('.who').getAttribute('title')).resolves.toBe(local);
    await expect(last.locator('time').getAttribute('datetime')).resolves.toMatch(/^\d{4}-\d\d-\d\dT/);
    await shot('dlq-redriven-by');
    await expectAccessible('dlq redriven by');
  });
});
