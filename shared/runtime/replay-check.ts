/**
 * The replay check before a deploy (`orrery replay-check`, and `replayCheck` in
 * `orrery-jobs/testing`): runs a handler against recorded journals (files `orrery journal export`
 * wrote, kept as fixtures) the way a worker replays a job, and says whether it would diverge.
 *
 * No step body runs, nothing is sent, started or written: each call that was recorded gets its
 * recorded result (a sleep is over, a wait has its outcome), and the replay stops at the first
 * call the journal has no entry for (where the run would go on for real). Each call is compared
 * with the journal as the worker compares it (core/replay.ts), so a renamed, removed or moved
 * step fails the check with the same message a deployed worker would hold the job with.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { EventWaits } from '../core/event-waits';
import type { EventSender } from '../core/events';
import { entryName, type Journal, MAX_WAIT_MS } from '../core/journal';
import {
  JOURNAL_EXPORT_FORMAT,
  type JournalExport,
  parseJournalExport,
  recordedEntriesOf,
} from '../core/journal-export';
import { type CallName, callKindOf } from '../core/replay';
import * as z from '../core/zod-mini';
import { NondeterminismError } from '../errors';
import { createLogger } from '../logger';
import { codeVersionOf } from './code-version';
import type { JobContext, JobDefinition } from './job-definition';
import { createWorkflow, Suspension } from './workflow';

/** How one replay ended. */
export interface ReplayResult {
  /** The journal's job and type. */
  jobId: string;
  type: string;
  /** Where the journal came from (its file), when it came from one. */
  source?: string;
  /** True when the handler replayed the journal without diverging. */
  ok: boolean;
  /**
   * `stopped`: the replay reached a call the journal has no entry for (`stoppedAt`), having
   * matched every one before it; `returned`: the handler returned, having made every recorded
   * call; `diverged`: a call (or the run's end) differs from the journal (`divergence`);
   * `threw`: the handler threw on recorded results; `timed-out`: it did not settle in time;
   * `no-handler`: no definition of the journal's type was given.
   */
  outcome: 'stopped' | 'returned' | 'diverged' | 'threw' | 'timed-out' | 'no-handler';
  /** The first call with no entry, for `stopped`. */
  stoppedAt?: CallName;
  /** The divergence (as the worker's NondeterminismError carries it), for `diverged`. */
  divergence?: NondeterminismError['divergence'];
  /** One line saying what happened. */
  message: string;
}

/** What {@link replayJournal} may be told. */
export interface ReplayOptions {
  /** Longest a handler may take to reach its end or its first unrecorded call. @default 10_000 */
  timeoutMs?: number;
  /** Where the journal came from, for messages. @default none */
  source?: string;
}

/** Thrown into the handler at the first call with no entry: the replay ends there. */
class ReplayStop extends Error {
  constructor(readonly at: CallName | undefined) {
    super(at ? `replay stops at ${at.kind} "${at.name}": the journal has no entry for it` : 'replay stops');
    this.name = 'ReplayStop';
  }
}

/**
 * Replays one recorded journal with `def`'s handler. Resolves with what happened; never runs a
 * step body.
 * @example
 * const result = await replayJournal(checkout, parseJournalExport(JSON.parse(text), 'order-1.json'));
 * if (!result.ok) console.error(result.message);
 */
export async function replayJournal(
  def: JobDefinition,
  file: JournalExport,
  options: ReplayOptions = {},
): Promise<ReplayResult> {
  const base = { jobId: file.job.id, type: file.job.type, ...(options.source ? { source: options.source } : {}) };
  const entries = recordedEntriesOf(file);
  let stoppedAt: CallName | undefined;
  const stop = (at?: CallName): never => {
    stoppedAt ??= at;
    throw new ReplayStop(at);
  };
  const journal: Journal = {
    get: async (input) => entries.get(entryName(input.kind, input.name)),
    load: async () => entries,
    record: async (input) => stop({ kind: callKindOf(input.kind) ?? 'step', name: input.name }),
    signal: async (input) => file.inbox?.[input.name],
    deliver: async () => stop(),
  };
  const eventWaits = {
    register: async () => stop(),
    firstSince: async () => stop(),
  } as unknown as EventWaits;
  const events: EventSender = { send: async () => stop() };
  const controller = new AbortController();
  // every recorded sleep and wait is over: they all end within MAX_WAIT_MS of the job's creation
  const now = Date.parse(file.job.createdAt) + MAX_WAIT_MS;
  const workflow = createWorkflow({
    // not the job's first run: every call is read from, and compared with, the journal. Its
    // waits' life is counted from `now`, so a new sleep or wait (its deadline from `now`) is
    // not refused as past the job's life: the replay stops at its record, as at a new step's
    job: { id: file.job.id, createdAt: new Date(now).toISOString(), attempts: 2, resumes: 1 },
    journal,
    eventWaits,
    events,
    invoker: { start: async () => stop(), look: async () => stop() },
    clock: { now: () => now },
    signal: controller.signal,
    expiresAt: () => 0,
    version: codeVersionOf(def),
  });
  /** A call after the stop stops too: the replay ends at the first unrecorded entry. */
  const guard =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    (...args: A) =>
      stoppedAt ? Promise.reject(new ReplayStop(stoppedAt)) : call(...args);
  const ctx: JobContext = {
    jobId: file.job.id,
    type: file.job.type,
    attempt: 1,
    maxAttempts: 1,
    scheduledAt: file.job.createdAt,
    signal: controller.signal,
    log: createLogger({ level: 'silent' }),
    progress: () => {},
    parents: async () => stop(),
    step: guard((name: string, _fn: () => unknown) => workflow.step(name, () => stop({ kind: 'step', name }))),
    sleep: guard(workflow.sleep),
    waitForSignal: guard(workflow.waitForSignal),
    emit: guard(workflow.emit),
    waitForEvent: guard(workflow.waitForEvent),
    invoke: guard(workflow.invoke),
    patched: guard(workflow.patched),
  } as JobContext;
  const parsed = z.safeParse(def.spec.payload, file.job.payload);
  if (!parsed.success) {
    return {
      ...base,
      ok: false,
      outcome: 'threw',
      message: `the payload no longer matches the ${def.spec.type} schema: ${parsed.error.message}`,
    };
  }
  const timeoutMs = options.timeoutMs ?? 10_000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timed-out'>((resolve) => {
    timer = setTimeout(() => resolve('timed-out'), timeoutMs);
  });
  const ran = Promise.resolve()
    .then(() => def.run(parsed.data, ctx))
    .then(
      () => ({ returned: true as const }),
      (error: unknown) => ({ returned: false as const, error }),
    );
  const end = await Promise.race([ran, timedOut]);
  clearTimeout(timer);
  controller.abort(new ReplayStop(stoppedAt));
  if (end === 'timed-out') {
    return {
      ...base,
      ok: false,
      outcome: 'timed-out',
      message: `the handler neither ended nor reached an unrecorded call within ${timeoutMs} ms`,
    };
  }
  const misuse = workflow.misuse(end.returned && !stoppedAt);
  if (misuse instanceof NondeterminismError) {
    return { ...base, ok: false, outcome: 'diverged', divergence: misuse.divergence, message: misuse.message };
  }
  if (stoppedAt) {
    return {
      ...base,
      ok: true,
      outcome: 'stopped',
      stoppedAt,
      message: `replays; stops at ${stoppedAt.kind} "${stoppedAt.name}", the first call the journal has no entry for`,
    };
  }
  if (end.returned)
    return { ...base, ok: true, outcome: 'returned', message: 'replays to the end: the handler returned' };
  const error = misuse ?? end.error;
  // a wait not over at the journal's end: the run would wait there
  if (error instanceof Suspension || error instanceof ReplayStop) {
    return {
      ...base,
      ok: true,
      outcome: 'stopped',
      message: 'replays; stops where the run would wait, or read what the journal does not hold',
    };
  }
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return { ...base, ok: false, outcome: 'threw', message: `the handler threw on recorded results: ${text}` };
}

/**
 * Replays each journal with the definition of its type. A journal of a type not among `defs`
 * fails (`no-handler`).
 * @example
 * const results = await replayCheck([checkout, invoice], await readJournalFiles(['journals/']));
 * expect(results.filter((r) => !r.ok)).toEqual([]);
 */
export async function replayCheck(
  defs: readonly JobDefinition[],
  files: readonly (JournalExport & { source?: string })[],
  options: Omit<ReplayOptions, 'source'> = {},
): Promise<ReplayResult[]> {
  const byType = new Map(defs.map((d) => [d.spec.type, d]));
  const results: ReplayResult[] = [];
  for (const file of files) {
    const def = byType.get(file.job.type);
    if (!def) {
      results.push({
        jobId: file.job.id,
        type: file.job.type,
        ...(file.source ? { source: file.source } : {}),
        ok: false,
        outcome: 'no-handler',
        message: `no job definition of type "${file.job.type}" was given`,
      });
      continue;
    }
    results.push(await replayJournal(def, file, { ...options, ...(file.source ? { source: file.source } : {}) }));
  }
  return results;
}

/**
 * Replays every journal and throws an Error listing each one that diverged (or threw, or has
 * no definition): the test helper for CI.
 * @example
 * it('the deployed journals replay on this code', () => expectReplays([checkout], 'test/journals'));
 */
export async function expectReplays(
  defs: readonly JobDefinition[],
  paths: string | readonly string[],
  options: Omit<ReplayOptions, 'source'> = {},
): Promise<ReplayResult[]> {
  const files = await readJournalFiles(typeof paths === 'string' ? [paths] : paths);
  if (files.length === 0) throw new Error(`no journal files (*.json) in ${[paths].flat().join(', ')}`);
  const results = await replayCheck(defs, files, options);
  const failed = results.filter((r) => !r.ok);
  if (failed.length > 0) {
    throw new Error(
      `${failed.length} of ${results.length} journals do not replay on this code:\n` +
        failed.map((r) => `  ${r.source ?? r.jobId} (${r.type}): ${r.message}`).join('\n'),
    );
  }
  return results;
}

/**
 * Reads journal files: each path is a `.json` file or a folder of them (not searched further
 * down). Throws naming the file that is not a journal.
 */
export async function readJournalFiles(paths: readonly string[]): Promise<(JournalExport & { source: string })[]> {
  const files: string[] = [];
  for (const path of paths) {
    if ((await stat(path)).isDirectory()) {
      const names = (await readdir(path)).filter((n) => n.endsWith('.json')).sort();
      files.push(...names.map((n) => join(path, n)));
    } else files.push(path);
  }
  const out: (JournalExport & { source: string })[] = [];
  for (const source of files) {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(source, 'utf8'));
    } catch (error) {
      throw new Error(`${source} is not JSON (an ${JOURNAL_EXPORT_FORMAT} file): ${(error as Error).message}`);
    }
    out.push({ ...parseJournalExport(json, source), source });
  }
  return out;
}
