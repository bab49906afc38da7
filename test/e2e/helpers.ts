import { expect } from 'vitest';
import type { E2ETarget } from './target';

export interface JobBody {
  id: string;
  type: string;
  state: string;
  attempts: number;
  maxAttempts: number;
  createdAt: string;
  runAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  lastError: { message: string; reason: string; attempt: number } | null;
  errors: { attempt: number; reason: string }[];
  result: unknown;
  payload: unknown;
}

export async function enqueue(target: E2ETarget, body: unknown): Promise<{ status: number; job: JobBody }> {
  const response = await target.request('POST', '/jobs', body);
  const json = (await response.json()) as JobBody;
  return { status: response.status, job: json };
}

export async function getJob(target: E2ETarget, id: string): Promise<JobBody> {
  const response = await target.request('GET', `/jobs/${encodeURIComponent(id)}`);
  expect(response.status).toBe(200);
  return (await response.json()) as JobBody;
}

/** Polls `GET /jobs/{id}` until the job is in one of `states`; fails with the last state seen. */
export async function waitForState(
  target: E2ETarget,
  id: string,
  states: string[],
  timeoutMs = 20_000,
): Promise<JobBody> {
  const deadline = Date.now() + timeoutMs;
  let last: JobBody | undefined;
  while (Date.now() < deadline) {
    last = await getJob(target, id);
    if (states.includes(last.state)) return last;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`job ${id} did not reach ${states.join('|')} in ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

let counter = 0;
/** A job id unique within the run. */
export function uniqueId(label: string): string {
  counter += 1;
  return `${label}-${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}
