/**
 * The dashboard's API access: every call goes to the dashboard server's `/api` prefix, which
 * forwards it to the Orrery API (signed, when the server signs). Errors keep the API's
 * `{ error: { code, message } }` shape.
 */

/** What the dashboard server tells the UI at `/ui/config.json`. */
export interface DashboardConfig {
  apiBase: string;
  readOnly: boolean;
  pollMs: number;
}

export let config: DashboardConfig = { apiBase: '/api', readOnly: false, pollMs: 5_000 };

/** Loads `/ui/config.json`; keeps the defaults when it cannot. */
export async function loadConfig(): Promise<DashboardConfig> {
  try {
    const response = await fetch('config.json', { headers: { accept: 'application/json' } });
    if (response.ok) config = { ...config, ...((await response.json()) as Partial<DashboardConfig>) };
  } catch {
    // defaults
  }
  return config;
}

/** An error answer of the API (or of the dashboard server: `read_only`, `upstream_unreachable`). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly body: unknown;
  constructor(status: number, code: string, message: string, body?: unknown) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/** The fields an error answer names (a 400's `issues`: `{ path, message }`), or none. */
export function fieldIssues(error: unknown): { path: string; message: string }[] {
  if (!(error instanceof ApiError)) return [];
  const issues = (error.body as { error?: { issues?: unknown } } | undefined)?.error?.issues;
  if (!Array.isArray(issues)) return [];
  return issues.filter(
    (i): i is { path: string; message: string } => typeof i?.path === 'string' && typeof i?.message === 'string',
  );
}

/** True when the API does not have the route (an older deployment). */
export function isMissingRoute(error: unknown): boolean {
  return error instanceof ApiError && (error.code === 'route_not_found' || error.code === 'method_not_allowed');
}

export type Query = Record<string, string | number | undefined | null>;

/** `?a=1&b=2` of the defined values, or ''. */
export function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** Encodes one path segment (an id, a type, a schedule name). */
export const seg = (value: string) => encodeURIComponent(value);

/** Sends one call; resolves to the parsed JSON body, throws {@link ApiError} for an error answer. */
export async function api<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${config.apiBase}${path}`, {
      method,
      headers: {
        accept: 'application/json',
        'x-orrery-dashboard': '1',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    throw new ApiError(0, 'network_error', `the dashboard server did not answer: ${(error as Error).message}`);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    const message = error?.message ?? (parsed as { Message?: string } | undefined)?.Message ?? text.slice(0, 200);
    throw new ApiError(
      response.status,
      error?.code ?? `http_${response.status}`,
      message || response.statusText,
      parsed,
    );
  }
  return parsed as T;
}

// ------------------------------------------------------------------ shapes the UI reads
// The API's own types and state lists (type-only imports and plain constants: esbuild bundles them)

export type {
  AttemptError,
  BulkAction,
  BulkResult,
  DlqListing,
  EventJobs,
  FlowView,
  InvokedJob,
  JobState,
  JobSummary,
  JobView,
  KeyState,
  Overview,
  ScheduleView,
  Timeline,
  TimelineEntry,
  TypeKeys,
} from '../../shared/client/types';
export { shortPrincipal } from '../../shared/core/access';
export type { OperatorAction } from '../../shared/core/job';
export { JOB_STATES } from '../../shared/core/states';

/** A page of `GET /jobs/{id}/invoked`. */
export interface InvokedPage {
  id: string;
  items: InvokedJob[];
  nextCursor: string | null;
}

/** Whether `id` has the shape of a job an event made (`ev.` and 40 hex digits: shared/core/events.ts). */
export const isEventJobId = (id: string): boolean => /^ev\.[0-9a-f]{40}$/.test(id);

import type { InvokedJob, JobSummary, Overview } from '../../shared/client/types';
import { CANCELLABLE_STATES, RERUNNABLE_STATES, RETRYABLE_STATES } from '../../shared/core/control';

/** States a job can be retried from, and cancelled from. */
export const RETRYABLE: readonly string[] = RETRYABLE_STATES;
export const CANCELLABLE: readonly string[] = CANCELLABLE_STATES;
/** States a job can be rerun from (`POST /jobs/{id}/rerun`). */
export const RERUNNABLE: readonly string[] = RERUNNABLE_STATES;

export interface JobPage {
  items: JobSummary[];
  nextCursor: string | null;
}

/** One type's row of the overview. */
export type OverviewType = Overview['types'][number];
