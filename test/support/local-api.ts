/** HTTP helpers for tests that drive a local platform's API, as a caller would. */
import { expect } from 'vitest';
import type { JobView } from '../../shared/core/job';
import type { JobStore } from '../../shared/core/ports';

/** `POST /jobs` with `body`: the status and the answer's JSON. */
export async function postJob(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${url}/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** `POST /jobs` that must create the job (201); the job as answered. */
export async function enqueueNew(url: string, body: unknown): Promise<JobView> {
  const { status, json } = await postJob(url, body);
  expect(status, JSON.stringify(json)).toBe(201);
  return json as unknown as JobView;
}

/** Waits until every job of `ids` succeeded, or `ms` passed; returns how many had not. */
export async function untilSucceeded(store: JobStore, ids: readonly string[], ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  let open = ids.length;
  while (Date.now() < deadline) {
    const states = await Promise.all(ids.map((id) => store.get(id)));
    open = states.filter((j) => j?.state !== 'succeeded').length;
    if (open === 0) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return open;
}

/** Polls `what` every 100 ms until it holds; throws after `ms`. */
export async function until(what: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await what()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${ms} ms`);
}
