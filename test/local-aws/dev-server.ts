/**
 * The local development server behind `orrery dev` and `npm run dev`: local AWS (DynamoDB Local,
 * fauxqs SQS, the Scheduler stand-in) on 127.0.0.1, the given job types deployed into it, the API
 * and the dashboard on one port (the dashboard at `/ui/`, its `/api/` calls back to the API), and
 * every job state change printed as it happens.
 *
 * {@link DevServer.reload} swaps the job definitions (after a handler changed): it stops the API
 * server, the queue runners and the supervisor, and starts them again on the same port with the
 * new definitions. The emulators keep running, so the table, the queues and the schedules (the
 * jobs waiting, retrying or sleeping) are all kept. A handler running when the reload starts
 * finishes first, on the code it started with (the queue runners stop by waiting for their
 * invocations), so the reload takes as long as the longest running attempt.
 */
// First, so that an old Node gets a named error before anything else of the kit runs.
import './node-floor-check';
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { DevJob } from '../../shared/cli/dev-config';
import type { GrantsDocument } from '../../shared/core/access';
import type { Job } from '../../shared/core/job';
import type { JobStore } from '../../shared/core/ports';
import { createDashboardHandler } from '../../shared/dashboard/server';
import { CostMeter } from '../../shared/lambda/cost-meter';
import { LOCAL_CREDENTIALS } from './clients';
import type { LocalCaller } from './function-url';
import { type LocalAws, startLocalAws } from './index';
import { type LocalPlatform, startLocalPlatform } from './local-platform';

export interface DevServerOptions {
  jobs: readonly DevJob[];
  /** Port on 127.0.0.1 of the API and the dashboard; 0 picks a free one. @default 4600 */
  port?: number;
  /** Prefix of the table, queues and schedule group. @default 'orrery-dev' */
  prefix?: string;
  /** The built dashboard. @default the dashboard server's own default */
  assetsDir?: string;
  /** Where the job state lines go. @default console.log */
  log?: (line: string) => void;
  /** Colour the state names. @default false */
  color?: boolean;
  /** Local AWS to run on, left running by `stop()`. @default its own, started now and stopped with the server */
  aws?: LocalAws;
  /**
   * The grants to enforce, as the construct deploys them (the default local credentials stay
   * admin). With grants or callers the API takes only signed requests.
   * @default every caller, signed or not, is admin
   */
  grants?: GrantsDocument;
  /** Local credentials mapped to identities, to call the API as them. @default none */
  callers?: readonly LocalCaller[];
}

/** Who may call the API: what a reload may change beside the jobs. */
export type DevServerAccess = Pick<DevServerOptions, 'grants' | 'callers'>;

export interface DevServer {
  /** The API's URL; the dashboard is at `${url}/ui/`. Stays the same across reloads. */
  url: string;
  aws: LocalAws;
  /** The platform running now (a reload replaces it). */
  platform(): LocalPlatform;
  /**
   * Restarts the API, runners and supervisor with `jobs` (and `access`, when given); the
   * emulators and their state stay.
   */
  reload(jobs: readonly DevJob[], access?: DevServerAccess): Promise<void>;
  stop(): Promise<void>;
}

const STATE_COLORS: Record<string, number> = {
  succeeded: 32,
  failed: 31,
  retrying: 33,
  running: 36,
  cancelled: 90,
  skipped: 90,
};

/** Wraps the store so every successful state change is printed; other methods pass through. */
export function observeStore(store: JobStore, log: (line: string) => void, color = false): JobStore {
  const paint = (code: number, text: string) => (color ? `\u001b[${code}m${text}\u001b[0m` : text);
  const show = (job: Pick<Job, 'id' | 'type' | 'attempts'>, state: string, detail = '') => {
    const time = new Date().toISOString().slice(11, 23);
    const painted = paint(STATE_COLORS[state] ?? 37, state.padEnd(9));
    log(`${time}  ${painted}  ${job.type.padEnd(6)} ${job.id}  attempt ${job.attempts}${detail ? `  ${detail}` : ''}`);
  };
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

/**
 * Starts local AWS and the platform with `jobs`.
 *
 * @example
 * const dev = await startDevServer({ jobs: [invoice] });
 * console.log(`${dev.url}/ui/`);
 * await dev.reload([invoiceV2]);
 * await dev.stop();
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const log = options.log ?? ((line: string) => console.log(line));
  const prefix = options.prefix ?? 'orrery-dev';
  let apiUrl = '';
  const dashboardOptions = {
    upstream: () => apiUrl,
    ...(options.assetsDir ? { assetsDir: options.assetsDir } : {}),
    pollMs: 2_000,
  };
  const unsigned = createDashboardHandler(dashboardOptions);
  // with grants the API takes signed requests only: the dashboard signs as the default local
  // credentials, which stay admin (the local Function URL verifies for us-east-1)
  const signed = createDashboardHandler({
    ...dashboardOptions,
    sign: 'always',
    credentials: LOCAL_CREDENTIALS,
    region: 'us-east-1',
  });
  const aws = options.aws ?? (await startLocalAws());
  const stopAws = () => (options.aws ? Promise.resolve() : aws.stop());
  // each job's own AWS requests and write units, shown as `cost` on GET /jobs/{id}, as deployed
  const meter = new CostMeter();
  let access: DevServerAccess = { grants: options.grants, callers: options.callers };
  const start = (jobs: readonly DevJob[], port: number) =>
    startLocalPlatform({
      aws,
      prefix,
      jobs,
      port,
      ...(access.grants ? { grants: access.grants } : {}),
      ...(access.callers ? { callers: access.callers } : {}),
      wrapStore: (store) => observeStore(store, log, options.color),
      supervisor: { intervalMs: 5_000 },
      meter,
      functionUrl: { fallback: access.grants || access.callers?.length ? signed : unsigned },
    });
  let platform: LocalPlatform;
  try {
    platform = await start(options.jobs, options.port ?? 4600);
  } catch (error) {
    await stopAws();
    throw error;
  }
  apiUrl = platform.url;
  const port = Number(new URL(platform.url).port);
  let reloading: Promise<void> = Promise.resolve();
  return {
    url: platform.url,
    aws,
    platform: () => platform,
    reload(jobs, next) {
      // one reload at a time, in order
      reloading = reloading.then(async () => {
        if (next) access = { grants: next.grants, callers: next.callers };
        await platform.stop();
        platform = await start(jobs, port);
      });
      return reloading;
    },
    async stop() {
      await reloading.catch(() => undefined);
      await platform.stop();
      await stopAws();
    },
  };
}

/**
 * Calls `onChange` (once per burst, after `debounceMs` of quiet) when one of `files` changes.
 * Watches their directories rather than the files, so an editor's save-by-rename is seen too.
 */
export function watchFiles(
  files: readonly string[],
  onChange: (file: string) => void,
  debounceMs = 200,
): { close(): void } {
  const byDir = new Map<string, Set<string>>();
  for (const file of files) {
    const names = byDir.get(dirname(file)) ?? new Set<string>();
    names.add(basename(file));
    byDir.set(dirname(file), names);
  }
  let timer: NodeJS.Timeout | undefined;
  const watchers: FSWatcher[] = [];
  for (const [dir, names] of byDir) {
    watchers.push(
      watch(dir, (_event, name) => {
        if (!name || !names.has(name.toString())) return;
        clearTimeout(timer);
        timer = setTimeout(() => onChange(`${dir}/${name}`), debounceMs);
      }),
    );
  }
  return {
    close() {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}
