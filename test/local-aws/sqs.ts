import type { AddressInfo } from 'node:net';

/** Options for {@link startLocalSqs}. */
export interface LocalSqsOptions {
  /** TCP port on 127.0.0.1; `0` (default) picks a free one. */
  port?: number;
  /** Region used when a request carries no SigV4 scope. @default 'us-east-1' */
  region?: string;
}

/** Message counts of one queue, read without receiving anything. */
export interface QueueSnapshot {
  visible: number;
  inFlight: number;
  delayed: number;
  /** When each delayed or in-flight message becomes visible (real epoch ms), earliest first. */
  returnsAt: number[];
  attributes: Record<string, string>;
}

/** A running in-process SQS emulator (fauxqs). */
export interface LocalSqs {
  /** `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL_SQS`. */
  readonly endpoint: string;
  readonly port: number;
  /** The queue URL fauxqs hands out for `name`: `${endpoint}/000000000000/${name}`. */
  queueUrl(name: string): string;
  /** Counts of a queue by name, or `undefined` if it does not exist. */
  inspect(name: string): QueueSnapshot | undefined;
  /** Drops every message of every queue (queues stay). */
  reset(): void;
  /** Closes the server, ending open long polls. */
  stop(): Promise<void>;
}

/** The account id fauxqs uses in queue URLs and ARNs. */
export const LOCAL_ACCOUNT_ID = '000000000000';

interface SqsStoreLike {
  host: string;
  inspectQueue(name: string):
    | {
        attributes: Record<string, string>;
        messages: {
          ready: unknown[];
          delayed: { delayUntil?: number }[];
          inflight: { visibilityDeadline?: number }[];
        };
      }
    | undefined;
  clearMessages(): void;
}

/**
 * Starts fauxqs in this process on 127.0.0.1, with queue URLs that are plain
 * `http://127.0.0.1:PORT/000000000000/<name>`.
 *
 * Why: fauxqs' default URLs (`http://sqs.<region>.localhost:PORT/...`) do not resolve
 * without patching DNS, and the SQS client's `useQueueUrlAsEndpoint` (default on) would
 * switch to the queue URL's origin and warn on every call whenever that origin differs from
 * `AWS_ENDPOINT_URL_SQS`. With the store's URL host cleared, fauxqs builds queue URLs from the
 * request's `Host` header, which is exactly `AWS_ENDPOINT_URL_SQS`'s host, so a plain
 * `new SQSClient({})` works with the URLs CreateQueue/GetQueueUrl return, with no DNS patch and
 * no client options. (fauxqs' public `host` option cannot do this: it always prepends
 * `sqs.<region>.`.) fauxqs' own `startFauxqs` also listens on 0.0.0.0; this binds 127.0.0.1.
 *
 * Timing (visibility, delays) runs on the real wall clock: keep those values small in tests.
 *
 * @example
 * const sqs = await startLocalSqs();
 * process.env.AWS_ENDPOINT_URL_SQS = sqs.endpoint;
 * const client = new SQSClient({});
 * const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: 'demo' }));
 * // QueueUrl === sqs.queueUrl('demo')
 * await sqs.stop();
 */
export async function startLocalSqs(options: LocalSqsOptions = {}): Promise<LocalSqs> {
  const { buildApp } = await loadFauxqs();
  const { SqsStore } = await fauxqsInternal<{ SqsStore: new () => SqsStoreLike }>('sqs/sqsStore.js', 'SqsStore');
  const { SnsStore } = await fauxqsInternal<{ SnsStore: new () => never }>('sns/snsStore.js', 'SnsStore');
  const { S3Store } = await fauxqsInternal<{ S3Store: new () => never }>('s3/s3Store.js', 'S3Store');
  const sqsStore = new SqsStore();
  if (typeof sqsStore.host !== 'string' || typeof sqsStore.inspectQueue !== 'function') {
    throw new Error('fauxqs SqsStore no longer has `host`/`inspectQueue` (update test/local-aws/sqs.ts)');
  }
  sqsStore.host = ''; // falsy host: queue URLs are built from the request's Host header
  const app = buildApp({
    logger: false,
    defaultRegion: options.region ?? 'us-east-1',
    stores: { sqsStore: sqsStore as never, snsStore: new SnsStore(), s3Store: new S3Store() },
  });
  await app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const endpoint = `http://127.0.0.1:${port}`;

  return {
    endpoint,
    port,
    queueUrl: (name) => `${endpoint}/${LOCAL_ACCOUNT_ID}/${name}`,
    inspect(name) {
      const queue = sqsStore.inspectQueue(name);
      if (!queue) return undefined;
      return {
        visible: queue.messages.ready.length,
        inFlight: queue.messages.inflight.length,
        delayed: queue.messages.delayed.length,
        returnsAt: [
          ...queue.messages.delayed.map((m) => m.delayUntil ?? 0),
          ...queue.messages.inflight.map((m) => m.visibilityDeadline ?? 0),
        ].sort((a, b) => a - b),
        attributes: queue.attributes,
      };
    },
    reset: () => sqsStore.clearMessages(),
    stop: async () => {
      await app.close();
    },
  };
}

/**
 * Loads fauxqs on first use, so importing this module (and `orrery-jobs/testing`, which
 * declares fauxqs an optional peer) works without it; a missing fauxqs is named with the fix.
 */
async function loadFauxqs(): Promise<typeof import('fauxqs')> {
  try {
    return await import('fauxqs');
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new Error('the local SQS needs the fauxqs package (2.x): npm install --save-dev fauxqs', { cause: error });
  }
}

/**
 * fauxqs does not export its store classes, and `buildApp` only leaves the URL host alone
 * when handed stores, so load them from `dist/` next to the resolved entry point. Pinned to
 * fauxqs 2.x's layout; fails loudly if that changes.
 */
async function fauxqsInternal<T>(path: string, exportName: string): Promise<T> {
  const href = new URL(`./${path}`, import.meta.resolve('fauxqs')).href;
  const module = (await import(href)) as Record<string, unknown>;
  if (typeof module[exportName] !== 'function') {
    throw new Error(`fauxqs layout changed: ${href} has no ${exportName} export (update test/local-aws/sqs.ts)`);
  }
  return module as T;
}
