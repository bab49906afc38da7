import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type JobSummary, type JobView, type Listing, type Page, type TimelineEntry, uploadRef } from '../../client';
import { MAX_BLOB_BYTES, MAX_INLINE_BODY_BYTES } from '../../core/blobs';
import { MAX_PRIORITY } from '../../core/priority';
import { type CommandDef, UsageError } from '../args';
import { type CommandContext, EXIT, printJson, println } from '../context';
import { formatJob, jobTable, table } from '../format';
import { intOption, jobIdsOption, payloadOption, stateOption, stringOption, timeOption } from '../input';

type Command = CommandDef<CommandContext>;

/** Largest page the CLI asks for, and most pages one `list` reads. */
const PAGE_SIZE = 100;
const MAX_PAGES = 50;

async function firstPage<Item>(listing: Listing<Item>): Promise<Page<Item>> {
  for await (const page of listing.pages()) return page;
  return { items: [], nextCursor: null };
}

function showJob(context: CommandContext, job: JobView, headline?: string): number {
  if (context.json) {
    printJson(context.stdout, job);
  } else {
    if (headline) println(context.stdout, headline);
    println(context.stdout, formatJob(job, context.style));
  }
  return EXIT.ok;
}

const enqueue: Command = {
  path: ['enqueue'],
  args: ['type'],
  summary: 'enqueue a job',
  description:
    'Idempotent by id: without --id the CLI picks a random one, so its own retries never create two jobs.\n' +
    'Replaying an id with the same payload prints the existing job; a different payload is an id_conflict error.\n' +
    `A payload whose request would be over the API's inline limit (${MAX_INLINE_BODY_BYTES} bytes, the Function URL's 6 MB\n` +
    `less its envelope) is uploaded first (POST /uploads and a PUT to S3) and enqueued by reference, up to ${MAX_BLOB_BYTES} bytes.`,
  options: {
    payload: { type: 'string', value: 'JSON', description: 'the payload, a JSON object (default: {})' },
    'payload-file': {
      type: 'string',
      value: 'FILE',
      description: 'read the payload from FILE (- for stdin); uploaded first when over the inline limit',
    },
    'payload-ref': {
      type: 'string',
      value: 'REF',
      description: 'enqueue an upload (u/…, printed by orrery upload) instead of a payload',
    },
    id: { type: 'string', value: 'ID', description: 'job id, 1-64 of A-Za-z0-9_.- (default: a random UUID)' },
    delay: { type: 'string', value: 'SECONDS', description: 'run after this many seconds (up to 366 days)' },
    'run-at': { type: 'string', value: 'ISO', description: 'run at this time, e.g. 2026-12-01T09:00:00Z' },
    'max-attempts': { type: 'string', value: 'N', description: "attempts in all, 1-25 (default: the job type's)" },
    priority: {
      type: 'string',
      value: 'N',
      description:
        "0-10, higher first in its type's concurrency line (types with a priority option; default: the type's)",
    },
    'depends-on': {
      type: 'string',
      value: 'ID[,ID…]',
      description: 'job ids to wait for, comma-separated: it starts once they all succeeded',
    },
    quiet: { type: 'boolean', short: 'q', description: 'print only the job id' },
  },
  examples: [
    `orrery enqueue echo --payload '{"hello":"world"}'`,
    'orrery enqueue flaky --payload \'{"failTimes":2}\' --id order-1234 --max-attempts 5',
    'orrery enqueue sleep --payload-file payload.json --delay 600',
    'orrery enqueue render-report --payload-file rows-9mb.json   # uploaded, then enqueued by reference',
    'orrery enqueue render-report --payload-ref "$(orrery upload rows-9mb.json)"',
    'orrery enqueue report --depends-on extract-1,extract-2',
    `orrery enqueue render --payload '{"page":1}' --priority 8`,
    'id=$(orrery enqueue echo -q) && orrery watch "$id"',
  ],
  async run(context, args, options) {
    const name = 'enqueue';
    const ref = stringOption(options, 'payload-ref');
    if (ref !== undefined && (options.payload !== undefined || options['payload-file'] !== undefined)) {
      throw new UsageError('give --payload-ref, or --payload or --payload-file, not both', name);
    }
    const payload = ref !== undefined ? uploadRef(ref) : ((await payloadOption(context, options, name)) ?? {});
    const delaySeconds = intOption(options, 'delay', name, { min: 0 });
    const runAt = timeOption(options, 'run-at', name);
    const maxAttempts = intOption(options, 'max-attempts', name, { min: 1 });
    const priority = intOption(options, 'priority', name, { min: 0, max: MAX_PRIORITY });
    const id = stringOption(options, 'id');
    const dependsOn = jobIdsOption(options, 'depends-on', name);
    const { created, job, upload } = await context.client().enqueue(args.type as string, payload, {
      ...(id === undefined ? {} : { id }),
      ...(delaySeconds === undefined ? {} : { delaySeconds }),
      ...(runAt === undefined ? {} : { runAt }),
      ...(maxAttempts === undefined ? {} : { maxAttempts }),
      ...(priority === undefined ? {} : { priority }),
      ...(dependsOn === undefined ? {} : { dependsOn }),
    });
    if (options.quiet && !context.json) {
      println(context.stdout, job.id);
      return EXIT.ok;
    }
    const { style } = context;
    const headline = created
      ? `${style.green('created')} job ${style.bold(job.id)}`
      : `${style.yellow('existing')} job ${style.bold(job.id)} (same id and payload, nothing new was created)`;
    return showJob(
      context,
      job,
      upload ? `${headline}\n${style.dim(`payload uploaded first (${upload.bytes} bytes, ${upload.ref})`)}` : headline,
    );
  },
};

const upload: Command = {
  path: ['upload'],
  args: ['file'],
  summary: 'upload a payload for a later enqueue; prints its reference',
  description:
    'Sends FILE (- for stdin), a JSON object, to the payload bucket: POST /uploads, then a PUT of its bytes as they are\n' +
    `to the presigned S3 URL the API answers (valid 15 minutes). Up to ${MAX_BLOB_BYTES} bytes. Prints the reference\n` +
    '(u/…) to enqueue with, within a day: orrery enqueue TYPE --payload-ref REF. One upload may be enqueued more\n' +
    'than once. orrery enqueue --payload-file uploads a large file by itself; this is for uploading ahead.',
  options: {},
  examples: [
    'ref=$(orrery upload rows.json) && orrery enqueue render-report --payload-ref "$ref"',
    'orrery upload rows.json --json   # {"ref", "bytes", "expiresAt"}',
  ],
  async run(context, args) {
    const name = 'upload';
    const file = args.file as string;
    let bytes: Uint8Array;
    try {
      bytes =
        file === '-' ? new TextEncoder().encode(await context.readStdin()) : readFileSync(resolve(context.cwd, file));
    } catch (error) {
      throw new UsageError(`cannot read ${file}: ${(error as Error).message}`, name);
    }
    const from = file === '-' ? 'stdin' : file;
    if (bytes.byteLength > MAX_BLOB_BYTES) {
      throw new UsageError(`${from} is ${bytes.byteLength} bytes; an upload takes at most ${MAX_BLOB_BYTES}`, name);
    }
    // checked here so that a typo fails now, not at the enqueue a day later
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder().decode(bytes));
    } catch (error) {
      throw new UsageError(`${from} is not valid JSON: ${(error as Error).message}`, name);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new UsageError(`${from} must be a JSON object (a job's payload)`, name);
    }
    const done = await context.client().upload(bytes);
    if (context.json) printJson(context.stdout, { ref: done.ref, bytes: done.bytes, expiresAt: done.expiresAt });
    else println(context.stdout, done.ref);
    return EXIT.ok;
  },
};

const get: Command = {
  path: ['get'],
  args: ['id'],
  summary: 'show a job',
  options: {},
  examples: ['orrery get order-1234', 'orrery get order-1234 --json | jq .result'],
  async run(context, args) {
    return showJob(context, await context.client().get(args.id as string));
  },
};

const list: Command = {
  path: ['list'],
  args: [],
  summary: 'list jobs, newest first',
  options: {
    type: { type: 'string', value: 'TYPE', description: 'only jobs of this type' },
    state: { type: 'string', value: 'STATE', description: 'only jobs in this state' },
    'created-after': { type: 'string', value: 'ISO', description: 'only jobs created at or after this time' },
    'created-before': { type: 'string', value: 'ISO', description: 'only jobs created before this time' },
    limit: { type: 'string', value: 'N', description: 'show at most N jobs (default: 20)' },
    cursor: { type: 'string', value: 'CURSOR', description: 'continue after an earlier listing' },
  },
  examples: ['orrery list --type flaky --state failed', 'orrery list --json --limit 100 | jq -r ".items[].id"'],
  async run(context, _args, options) {
    const name = 'list';
    const limit = intOption(options, 'limit', name, { min: 1 }) ?? 20;
    const state = stateOption(options, 'state', name);
    const type = stringOption(options, 'type');
    const createdAfter = timeOption(options, 'created-after', name);
    const createdBefore = timeOption(options, 'created-before', name);
    const filter = {
      ...(type ? { type } : {}),
      ...(state ? { state } : {}),
      ...(createdAfter ? { createdAfter } : {}),
      ...(createdBefore ? { createdBefore } : {}),
    };
    // Ask each page for exactly what is still missing, so the last cursor resumes where we stop.
    // A filtered page may be empty and still have a cursor; the page cap bounds a runaway listing.
    const items: JobSummary[] = [];
    let cursor: string | null | undefined = stringOption(options, 'cursor');
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const page: Page<JobSummary> = await firstPage(
        context
          .client()
          .list({ ...filter, limit: Math.min(limit - items.length, PAGE_SIZE), ...(cursor ? { cursor } : {}) }),
      );
      items.push(...page.items.slice(0, limit - items.length));
      cursor = page.nextCursor;
      if (!cursor || items.length >= limit) break;
    }

    if (context.json) {
      printJson(context.stdout, { items, nextCursor: cursor ?? null });
      return EXIT.ok;
    }
    const { style } = context;
    if (items.length === 0) {
      println(context.stdout, style.dim('no jobs'));
    } else {
      println(context.stdout, jobTable(items, style, context.now()));
    }
    if (cursor) println(context.stdout, style.dim(`more: add --cursor ${cursor}`));
    return EXIT.ok;
  },
};

const invoked: Command = {
  path: ['invoked'],
  args: ['id'],
  summary: 'list the jobs a job started with ctx.invoke, and their states',
  options: {},
  examples: ['orrery invoked order-1234', 'orrery invoked order-1234 --json | jq -r ".items[].id"'],
  async run(context, args) {
    const items = await context
      .client()
      .invoked(args.id as string)
      .toArray();
    if (context.json) {
      printJson(context.stdout, { items });
      return EXIT.ok;
    }
    const { style } = context;
    if (items.length === 0) {
      println(context.stdout, style.dim('no invoked jobs'));
      return EXIT.ok;
    }
    const rows = items.map((i) => [i.name, i.id, i.type ?? style.dim('–'), i.state ?? style.dim('gone')]);
    println(context.stdout, table(['NAME', 'JOB', 'TYPE', 'STATE'], rows, style));
    return EXIT.ok;
  },
};

/** What one timeline entry says after its name: a step's size and preview, a wait's end, an invoke's child. */
function entryDetail(entry: TimelineEntry): string {
  switch (entry.kind) {
    case 'step':
      return `${entry.durationMs === null ? '' : `~${entry.durationMs} ms, `}${entry.bytes} B ${entry.preview}`;
    case 'sleep':
      return `until ${entry.until}${entry.woke ? ' (woke)' : ''}`;
    case 'wait':
      return `${entry.until ? `until ${entry.until}, ` : ''}${entry.wokenBy ? `woken by ${entry.wokenBy} at ${entry.endedAt}` : 'waiting'}${entry.preview === null ? '' : ` ${entry.preview}`}`;
    case 'invoke':
      return `${entry.child.id} ${entry.child.type ?? ''} ${entry.child.state ?? 'gone'}`;
  }
}

const timeline: Command = {
  path: ['timeline'],
  args: ['id'],
  summary: "show a job's run: each attempt, and its steps, sleeps, waits and invokes in order",
  options: {},
  examples: [
    'orrery timeline order-1234',
    'orrery timeline order-1234 --json | jq \'.entries[] | select(.kind == "step")\'',
  ],
  async run(context, args) {
    const run = await context.client().timeline(args.id as string);
    if (context.json) {
      printJson(context.stdout, run);
      return EXIT.ok;
    }
    const { style } = context;
    const attempt = (i: number | null) => {
      const a = i === null ? undefined : run.attempts[i];
      return a ? `${a.attempt} ${a.outcome}` : style.dim('–');
    };
    if (run.series) println(context.stdout, style.dim(`journal series ${run.series} (the last rerun's)`));
    for (const a of run.attempts) {
      const error = a.error ? `: ${a.error.name}: ${a.error.message}` : '';
      println(context.stdout, `attempt ${a.attempt} ${a.outcome}${a.endedAt ? ` at ${a.endedAt}` : ''}${error}`);
    }
    if (run.entries.length === 0) {
      println(context.stdout, style.dim('no step, sleep, wait or invoke recorded'));
      return EXIT.ok;
    }
    const rows = run.entries.map((e) => [attempt(e.attempt), e.kind, e.name, e.at, entryDetail(e)]);
    println(context.stdout, table(['ATTEMPT', 'KIND', 'NAME', 'AT', 'DETAIL'], rows, style));
    return EXIT.ok;
  },
};

const latest: Command = {
  path: ['latest'],
  args: ['type'],
  summary: 'show the newest job of a type',
  options: {},
  async run(context, args) {
    return showJob(context, await context.client().latest(args.type as string));
  },
};

const cancel: Command = {
  path: ['cancel'],
  args: ['id'],
  summary: 'cancel a job that has not finished',
  options: {},
  async run(context, args) {
    const job = await context.client().cancel(args.id as string);
    return showJob(context, job, `${context.style.state(job.state, job.state)} job ${context.style.bold(job.id)}`);
  },
};

const retry: Command = {
  path: ['retry'],
  args: ['id'],
  summary: 'run a failed or cancelled job again',
  options: {},
  async run(context, args) {
    const job = await context.client().retry(args.id as string);
    return showJob(context, job, `${context.style.state(job.state, job.state)} job ${context.style.bold(job.id)}`);
  },
};

const rerun: Command = {
  path: ['rerun'],
  args: ['id'],
  summary: 'run a job that ended again from a step, with a corrected payload',
  options: {
    'from-step': {
      type: 'string',
      value: 'STEP',
      description: 'keep the steps recorded before STEP and run it and the rest again (default: from the start)',
    },
    payload: { type: 'string', value: 'JSON', description: "a corrected payload, a JSON object (default: the job's)" },
    'payload-file': { type: 'string', value: 'FILE', description: 'read the payload from FILE (- for stdin)' },
  },
  examples: [`orrery rerun order-1234 --from-step charge --payload '{"orderId":"o-1","total":42}'`],
  async run(context, args, options) {
    const payload = await payloadOption(context, options, 'rerun');
    const fromStep = stringOption(options, 'from-step');
    const job = await context.client().rerun(args.id as string, {
      ...(fromStep !== undefined ? { fromStep } : {}),
      ...(payload !== undefined ? { payload } : {}),
    });
    const from = fromStep === undefined ? 'from the start' : `from step ${context.style.bold(fromStep)}`;
    return showJob(
      context,
      job,
      `${context.style.state(job.state, job.state)} job ${context.style.bold(job.id)}, ${from}`,
    );
  },
};

const signal: Command = {
  path: ['signal'],
  args: ['id', 'name'],
  summary: 'send a signal to a job (what ctx.waitForSignal waits for)',
  options: {
    payload: { type: 'string', value: 'JSON', description: 'the signal payload, a JSON object (default: null)' },
    'payload-file': { type: 'string', value: 'FILE', description: 'read the payload from FILE (- for stdin)' },
  },
  examples: [`orrery signal order-1234 payment --payload '{"amount":42}'`],
  async run(context, args, options) {
    const payload = (await payloadOption(context, options, 'signal')) ?? null;
    const receipt = await context.client().signal(args.id as string, args.name as string, payload);
    if (context.json) {
      printJson(context.stdout, receipt);
      return EXIT.ok;
    }
    const what = receipt.duplicate ? 'already had' : 'sent';
    const after = receipt.late
      ? 'too late: its wait for it had already timed out'
      : receipt.resumed
        ? 'it resumes now'
        : 'it gets it when it waits for it';
    println(
      context.stdout,
      `${what} signal ${context.style.bold(receipt.signal)} to ${context.style.bold(receipt.jobId)}: ${after}`,
    );
    return EXIT.ok;
  },
};

export const jobCommands: Command[] = [
  enqueue,
  upload,
  get,
  list,
  invoked,
  timeline,
  latest,
  cancel,
  retry,
  rerun,
  signal,
];
