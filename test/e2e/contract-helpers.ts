import { expect } from 'vitest';
import type { z } from 'zod';
import { errorSchema, jobPageSchema, jobViewSchema } from '../../shared/api/schemas';
import type { E2ETarget } from './target';

/**
 * Helpers of the contract tests: every response body is parsed with the zod response schema
 * that also generates `GET /openapi.json`, so a response that drifts from the document fails.
 */

export type JobView = z.output<typeof jobViewSchema>;
export type JobPage = z.output<typeof jobPageSchema>;

/** Sends a request and parses the body with `schema` after checking the status. */
export async function call<S extends z.ZodType>(
  target: E2ETarget,
  method: string,
  path: string,
  status: number,
  schema: S,
  body?: unknown,
): Promise<z.output<S>> {
  const response = await target.request(method, path, body);
  const text = await response.text();
  expect(response.status, `${method} ${path}: ${text.slice(0, 500)}`).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return schema.parse(JSON.parse(text));
}

/** Sends a request that must fail with `status` and `code`; returns the error body. */
export async function callError(
  target: E2ETarget,
  method: string,
  path: string,
  status: number,
  code: string,
  body?: unknown,
) {
  const { error } = await call(target, method, path, status, errorSchema, body);
  expect(error.code).toBe(code);
  return error;
}

export function getJob(target: E2ETarget, id: string): Promise<JobView> {
  return call(target, 'GET', `/jobs/${encodeURIComponent(id)}`, 200, jobViewSchema);
}

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs` with the last value seen. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export function waitForJob(target: E2ETarget, id: string, states: string[], timeoutMs = 20_000): Promise<JobView> {
  let last: JobView | undefined;
  return waitFor(
    `job ${id} to reach ${states.join('|')}`,
    async () => {
      last = await getJob(target, id);
      return states.includes(last.state) ? last : undefined;
    },
    timeoutMs,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; last: ${JSON.stringify(last)}`);
  });
}

/** Every page of `GET /jobs?<query>`, following nextCursor to the end. */
export async function listAll(target: E2ETarget, query: Record<string, string>): Promise<JobPage[]> {
  const pages: JobPage[] = [];
  let cursor: string | null = null;
  do {
    const params = new URLSearchParams({ ...query, ...(cursor ? { cursor } : {}) });
    const page: JobPage = await call(target, 'GET', `/jobs?${params}`, 200, jobPageSchema);
    pages.push(page);
    cursor = page.nextCursor;
    expect(pages.length).toBeLessThan(200);
  } while (cursor !== null);
  return pages;
}

/** Jobs ordered as the API lists them: newest first, ties broken by id (the index sort key). */
export function newestFirst<T extends { id: string; createdAt: string }>(jobs: readonly T[]): T[] {
  const key = (j: T) => `${j.createdAt}#${j.id}`;
  return [...jobs].sort((a, b) => (key(a) < key(b) ? 1 : key(a) > key(b) ? -1 : 0));
}

/** True when the suite runs against local AWS, where nothing else writes to the stack. */
export const isLocal = process.env.ORRERY_E2E_OUTPUTS === undefined;

let counter = 0;
/** A job id unique within the run. */
export function uniqueId(label: string): string {
  counter += 1;
  return `${label}-${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}
