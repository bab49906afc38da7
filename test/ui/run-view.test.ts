/**
 * The dashboard's run view in headless Chromium (Debian's `chromium`, driven by playwright-core)
 * against the local platform, as test/ui/dashboard.test.ts runs it: a workflow's timeline (steps,
 * a sleep, a signal wait, an invoke and its child), a flow's graph with each node's state, and
 * "Rerun from here" on a step (confirmed; the job runs again from that step, the steps before it
 * are not run again), hidden in read-only mode; a job held for an operator (its replay diverged)
 * with its badge, its reason and its Retry, Cancel and Rerun buttons, listed under the state
 * filter `held`. Each view is checked with axe-core.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as z from 'zod';
import { echo } from '../../functions/jobs/echo';
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

/** A workflow with two steps, a sleep, a signal wait and an invoke. */
const orderRunJob = defineJobType({ type: 'ui-order-run', payload: z.object({ order: z.string() }) });
const orderRun = defineJob(orderRunJob, async ({ order }, ctx) => {
  const loaded = await ctx.step('load', () => ({ order, lines: 3 }));
  await ctx.sleep('cool-down', 1_500);
  const approval = await ctx.waitForSignal<{ by: string }>('approve', { timeout: '10m' });
  await ctx.invoke('echo-it', 'echo', { order });
  await ctx.step('ship', () => ({ shipped: loaded.order, by: approval?.by }));
  return { ok: true };
});

/** Step bodies run, by `<job>:<step>`; ids whose `store` step throws. */
const bodies = new Map<string, number>();
const brokenStore = new Set<string>();
const threeStepsJob = defineJobType({ type: 'ui-three-steps', payload: z.object({}), retry: { maxAttempts: 1 } });
const threeSteps = defineJob(threeStepsJob, async (_payload, ctx) => {
  const ran = (step: string) => bodies.set(`${ctx.jobId}:${step}`, (bodies.get(`${ctx.jobId}:${step}`) ?? 0) + 1);
  const fetched = await ctx.step('fetch', () => {
    ran('fetch');
    return 20;
  });
  const computed = await ctx.step('compute', () => {
    ran('compute');
    return fetched + 1;
  });
  await ctx.step('store', () => {
    ran('store');
    if (brokenStore.has(ctx.jobId)) throw new Error('store is down');
    return computed;
  });
  return { stored: computed };
});

/** A workflow of `n` steps: more than a page of the run (100 entries) for `n` over 100. */
const manyStepsJob = defineJobType({ type: 'ui-many-steps', payload: z.object({ n: z.number().int() }) });
const manySteps = defineJob(manyStepsJob, async ({ n }, ctx) => {
  for (let i = 0; i < n; i++) await ctx.step(`s${i}`, () => i);
  return { n };
});

/** A workflow whose first step is renamed for the ids in `drifted` (a deploy under a run in flight). */
const drifted = new Set<string>();
const driftJob = defineJobType({ type: 'ui-drift', payload: z.object({}) });
const drift = defineJob(driftJob, async (_payload, ctx) => {
  const fetched = await ctx.step(drifted.has(ctx.jobId) ? 'fetch-v2' : 'fetch', () => 20);
  await ctx.sleep('pause', 1_500);
  return await ctx.step('store', () => fetched + 1);
});

let aws: LocalAws;
let platform: LocalPlatform;
let readOnly: DashboardServer;
let browser: Browser;
let page: Page;

interface BrowserGlobals {
  document: unknown;
  axe: { run(context: unknown, options: unknown): Promise<{ violations: AxeViolation[] }> };
}
interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  nodes: { target: string[] }[];
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${platform.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

async function until(id: string, done: (job: { state: string; waitingFor?: { key: string } }) => boolean) {
  const deadline = Date.now() + 40_000;
  let last: unknown;
  while (Date.now() < deadline) {
    last = (await call('GET', `/jobs/${id}`)).json;
    if (done(last as { state: string })) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`job ${id} stayed ${JSON.stringify(last)}`);
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
  buildUi(UI_DIST);
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  let apiUrl = '';
  const dashboard = createDashboardHandler({ upstream: () => apiUrl, assetsDir: UI_DIST, pollMs: 500 });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('ui-run'),
    jobs: [echo, orderRun, threeSteps, manySteps, drift],
    functionUrl: { fallback: dashboard },
  });
  apiUrl = platform.url;
  readOnly = await startDashboardServer({
    upstream: platform.url,
    sign: 'never',
    readOnly: true,
    port: 0,
    assetsDir: UI_DIST,
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, bypassCSP: true });
  page = await context.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
});

afterAll(async () => {
  await browser?.close();
  await readOnly?.stop();
  await platform?.stop();
  await aws?.stop();
});

describe('the run view', () => {
  it("shows a workflow's timeline: its steps, sleep, signal wait and invoke, with a link to the child", async () => {
    const id = uniquePrefix('order');
    expect((await call('POST', '/jobs', { id, type: 'ui-order-run', payload: { order: 'o-7' } })).status).toBe(201);
    await until(id, (job) => job.state === 'waiting' && job.waitingFor?.key === 'approve');

    await page.goto(`${platform.url}/ui/#/jobs/${id}`);
    await page.getByRole('heading', { name: `Job ${id} waiting` }).waitFor();
    const entries = page.getByRole('list', { name: 'Attempt 1 entries' });
    await entries.getByText('Signal wait').waitFor();
    await expect(entries.getByRole('listitem').count()).resolves.toBe(3);
    await expect(entries.getByRole('listitem').nth(2).textContent()).resolves.toMatch(
      /Signal wait approve: from .* until .*, waiting/,
    );
    await shot('run-waiting');

    expect((await call('POST', `/jobs/${id}/signals/approve`, { payload: { by: 'ops' } })).status).toBe(202);
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor({ timeout: 30_000 });
    await entries.getByText('Invoke', { exact: true }).waitFor();
    const items = entries.getByRole('listitem');
    await expect(items.count()).resolves.toBe(5);
    const texts = await items.allTextContents();
    expect(texts[0]).toMatch(/^Step load: ended .*, result 25 B \{"order":"o-7","lines":3\}/);
    expect(texts[1]).toMatch(/^Sleep cool-down: from .* until .*, woke at its time$/);
    expect(texts[2]).toMatch(/^Signal wait approve: from .* until .*, woken by the signal at .* \{"by":"ops"\}$/);
    expect(texts[3]).toMatch(
      new RegExp(`^Invoke echo-it: started .* child ${id}\\.echo-it echo succeeded, ended succeeded at `),
    );
    // the step after the invoke started when the invoke ended: its duration is shown
    expect(texts[4]).toMatch(/^Step ship: ended .*, took about .*, result \d+ B \{"shipped":"o-7","by":"ops"\}/);
    await expect(page.getByRole('heading', { name: 'Attempt 1 succeeded' }).count()).resolves.toBe(1);
    await shot('run-timeline');
    await expectAccessible('run timeline');

    // the child is a link to its page
    await entries.getByRole('link', { name: `${id}.echo-it` }).click();
    await page.getByRole('heading', { name: `Job ${id}.echo-it succeeded` }).waitFor();
    await page.getByRole('link', { name: id, exact: true }).waitFor();
  }, 90_000);

  it("draws a flow's graph in layers with each job's state", async () => {
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => uniquePrefix(`flow-${n}`)) as [string, string, string, string];
    const flowId = uniquePrefix('flow');
    const created = await call('POST', '/flows', {
      id: flowId,
      jobs: [
        { id: a, type: 'echo', payload: { n: 'a' } },
        { id: b, type: 'echo', payload: { n: 'b' }, dependsOn: [a] },
        { id: c, type: 'echo', payload: { n: 'c' }, dependsOn: [{ id: a, onParentFailure: 'ignore' }] },
        { id: d, type: 'echo', payload: { n: 'd' }, dependsOn: [b, c] },
      ],
    });
    expect(created.status).toBe(201);
    await until(d, (job) => job.state === 'succeeded');

    await page.goto(`${platform.url}/ui/#/flows`);
    await page.getByRole('heading', { name: 'Flows' }).waitFor();
    await page.getByLabel('Flow id').fill(flowId);
    await page.getByRole('button', { name: 'Open' }).click();
    await page.getByRole('heading', { name: `Flow ${flowId}` }).waitFor();
    const graph = page.getByRole('img', { name: new RegExp(`^Graph of flow ${flowId}`) });
    await graph.waitFor();
    await expect(graph.locator('g.flow-node').count()).resolves.toBe(4);
    await expect(graph.locator('g.flow-node-succeeded').count()).resolves.toBe(4);
    // four edges, the one of policy ignore drawn dashed
    await expect(graph.locator('path.flow-edge').count()).resolves.toBe(4);
    await expect(graph.locator('path.flow-edge-soft').count()).resolves.toBe(1);
    const layers = page.getByRole('list', { name: 'flow layers' });
    const layerItems = layers.locator(':scope > li');
    await expect(layerItems.count()).resolves.toBe(3);
    await expect(layerItems.nth(0).textContent()).resolves.toContain(a);
    await expect(layerItems.nth(1).textContent()).resolves.toMatch(new RegExp(`${b}.*succeeded.*${c}.*succeeded`));
    await expect(layerItems.nth(1).textContent()).resolves.toContain(`after ${a} (ignore)`);
    await expect(layerItems.nth(2).textContent()).resolves.toContain(`after ${b}, ${c}`);
    // its nodes in the drawing sit one layer after their deepest parent
    const x = async (id: string) =>
      Number(
        (await graph.locator('g.flow-node', { hasText: id.slice(0, 23) }).getAttribute('transform'))?.match(
          /translate\((\d+)/,
        )?.[1],
      );
    expect(await x(a)).toBeLessThan(await x(b));
    expect(await x(b)).toBe(await x(c));
    expect(await x(c)).toBeLessThan(await x(d));
    await shot('flow-graph');
    await expectAccessible('flow graph');
    await layers.getByRole('link', { name: d }).click();
    await page.getByRole('heading', { name: `Job ${d} succeeded` }).waitFor();
  }, 60_000);

  it('reruns a failed job from a step after a confirmation: the steps before it are not run again', async () => {
    const id = uniquePrefix('three');
    brokenStore.add(id);
    expect((await call('POST', '/jobs', { id, type: 'ui-three-steps', payload: {} })).status).toBe(201);
    await until(id, (job) => job.state === 'failed');

    await page.goto(`${platform.url}/ui/#/jobs/${id}`);
    await page.getByRole('heading', { name: `Job ${id} failed` }).waitFor();
    const entries = page.getByRole('list', { name: 'Attempt 1 entries' });
    await entries.getByText('compute').waitFor();
    await expect(entries.getByRole('listitem').count()).resolves.toBe(2);
    await expect(page.getByRole('heading', { name: 'Attempt 1 failed' }).count()).resolves.toBe(1);

    brokenStore.delete(id);
    await page.getByRole('button', { name: 'Rerun from here (step compute)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rerun the job from step compute?' });
    await dialog.waitFor();
    await expectAccessible('rerun confirmation');
    // cancelling the dialog changes nothing
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await expect(dialog.count()).resolves.toBe(0);
    expect(((await call('GET', `/jobs/${id}`)).json as { state: string }).state).toBe('failed');

    await page.getByRole('button', { name: 'Rerun from here (step compute)' }).click();
    await dialog.getByRole('button', { name: 'Rerun from this step' }).click();
    await page.getByRole('status').filter({ hasText: 'Rerun from step compute' }).waitFor();
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor({ timeout: 30_000 });
    // fetch ran once; compute and store ran again, once each
    expect([bodies.get(`${id}:fetch`), bodies.get(`${id}:compute`), bodies.get(`${id}:store`)]).toEqual([1, 2, 2]);
    await page.getByText(/Journal series r1\./).waitFor();
    await page.getByRole('list', { name: 'Attempt 1 entries' }).getByText('store').waitFor();
    await expect(page.getByRole('list', { name: 'Attempt 1 entries' }).getByRole('listitem').count()).resolves.toBe(3);
    // the operator's action is recorded as a rerun
    await expect(page.getByRole('list', { name: 'attempts' }).textContent()).resolves.toMatch(/rerun by /);
    await shot('run-rerun');
    await expectAccessible('run after a rerun');
  }, 90_000);

  it('shows a held job (its replay diverged) with its reason and Retry, Cancel and Rerun; a retry after the fix runs it', async () => {
    const id = uniquePrefix('drift');
    expect((await call('POST', '/jobs', { id, type: 'ui-drift', payload: {} })).status).toBe(201);
    await until(id, (job) => job.state === 'waiting');
    drifted.add(id); // the deploy: its first step renamed while it sleeps
    await until(id, (job) => job.state === 'held');

    await page.goto(`${platform.url}/ui/#/jobs/${id}`);
    await page.getByRole('heading', { name: `Job ${id} held` }).waitFor();
    await page.getByRole('note').filter({ hasText: 'Held for an operator' }).waitFor();
    await page
      .getByText(/NondeterminismError: .*position 0: the journal recorded step "fetch"/)
      .first()
      .waitFor();
    await page.getByText('Held since').waitFor();
    await expect(page.getByRole('button', { name: 'Retry', exact: true }).isEnabled()).resolves.toBe(true);
    await expect(page.getByRole('button', { name: 'Cancel…' }).isEnabled()).resolves.toBe(true);
    await page.getByRole('button', { name: 'Rerun from here (step fetch)' }).waitFor();
    await expect(page.locator('.badge-held').count()).resolves.toBeGreaterThan(0);
    await shot('run-held');
    await expectAccessible('held job');

    // the jobs list offers the state, and lists it under it
    await page.goto(`${platform.url}/ui/#/jobs?type=ui-drift&state=held`);
    await expect(page.getByLabel('State').locator('option', { hasText: 'held' }).count()).resolves.toBe(1);
    await page.getByRole('link', { name: id }).waitFor();
    await expectAccessible('jobs held');

    drifted.delete(id); // the fix: the step's old name back
    await page.goto(`${platform.url}/ui/#/jobs/${id}`);
    await page.getByRole('heading', { name: `Job ${id} held` }).waitFor();
    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor({ timeout: 30_000 });
    expect(((await call('GET', `/jobs/${id}`)).json as { result: unknown }).result).toBe(21);
  }, 90_000);

  it("drops the run's later pages it showed once a rerun elsewhere started a new series", async () => {
    const id = uniquePrefix('many');
    expect((await call('POST', '/jobs', { id, type: 'ui-many-steps', payload: { n: 103 } })).status).toBe(201);
    await until(id, (job) => job.state === 'succeeded');
    await page.goto(`${platform.url}/ui/#/jobs/${id}`);
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor();
    await page.getByRole('button', { name: 'Show more of the run' }).click();
    const run = page.getByRole('region', { name: 'Run' });
    await run.getByText('s102', { exact: true }).waitFor();

    // another operator reruns it from its first step with a payload of 2 steps (the CLI, the API)
    const rerun = await call('POST', `/jobs/${id}/rerun`, { fromStep: 's0', payload: { n: 2 } });
    expect(rerun.status).toBe(200);
    await until(id, (job) => job.state === 'succeeded');
    await page.getByText(/Journal series r1\./).waitFor({ timeout: 20_000 });
    await run.getByText('s1', { exact: true }).waitFor();
    // the new series holds s0 and s1 only: nothing of the old series' second page is shown
    await expect(run.getByText('s102', { exact: true }).count()).resolves.toBe(0);
    await expect(run.getByRole('button', { name: /^Rerun from here/ }).count()).resolves.toBe(2);
  }, 90_000);

  it('read-only mode shows the run without "Rerun from here"', async () => {
    const id = uniquePrefix('three-ro');
    expect((await call('POST', '/jobs', { id, type: 'ui-three-steps', payload: {} })).status).toBe(201);
    await until(id, (job) => job.state === 'succeeded');
    await page.goto(`${readOnly.uiUrl}#/jobs/${id}`);
    await page.getByRole('heading', { name: `Job ${id} succeeded` }).waitFor();
    const entries = page.getByRole('list', { name: 'Attempt 1 entries' });
    await entries.getByText('store').waitFor();
    await expect(entries.getByRole('listitem').count()).resolves.toBe(3);
    await expect(page.getByRole('button', { name: /Rerun from here/ }).count()).resolves.toBe(0);
    await expectAccessible('read-only run');
  }, 60_000);
});
