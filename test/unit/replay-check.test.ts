/**
 * The replay check (shared/runtime/replay-check.ts): a journal recorded by one version of a
 * handler (through the worker, on the in-memory ports) and exported as a file is replayed with
 * another version. No step body runs; the replay stops at the first unrecorded call; a renamed,
 * removed or reordered step fails it with the worker's message; an unchanged handler and a
 * `patched()` branch pass.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { journalExport, parseJournalExport } from '../../shared/core/journal-export';
import { incarnationOf } from '../../shared/core/table';
import type { JobContext, JobDefinition } from '../../shared/runtime/job-definition';
import { expectReplays, replayCheck, replayJournal } from '../../shared/runtime/replay-check';
import { echoJob, echoSpec, harness, redelivery, T0 } from './worker-harness';

type Handler = (payload: unknown, ctx: JobContext) => Promise<unknown>;
const bodies: string[] = [];
const body = (name: string) => () => {
  bodies.push(name);
  return `${name}!`;
};
const def = (run: Handler, version?: string): JobDefinition => ({
  spec: echoSpec,
  run,
  ...(version ? { version } : {}),
});

/** Version 1: a, b, a 2 h sleep, c. */
const v1 = def(async (_p, ctx) => {
  const a = await ctx.step('a', body('a'));
  await ctx.step('b', body('b'));
  await ctx.sleep('nap', '2h');
  await ctx.step('c', body('c'));
  return a;
}, 'v1');

/** A journal v1 recorded through the worker: up to its sleep, or (`ended`) to its end. */
async function recorded(id: string, ended = false) {
  const h = harness({ run: v1.run, spec: echoSpec, version: 'v1' });
  h.store.seed(echoJob(id));
  await h.worker(redelivery(id));
  if (ended) {
    h.clock.advance(2 * 3_600_000);
    await h.worker(redelivery(id));
  }
  const job = h.store.peek(id);
  if (!job) throw new Error('no job');
  const entries = await h.journal.load({ jobId: id, incarnation: incarnationOf(new Date(T0).toISOString()) });
  // through JSON, as a file
  return parseJournalExport(JSON.parse(JSON.stringify(journalExport(job, entries))), `${id}.json`);
}

describe('replayJournal', () => {
  it('an unchanged handler replays, runs no step body, and stops at the first unrecorded call', async () => {
    const file = await recorded('rc-same');
    bodies.length = 0;
    const result = await replayJournal(v1, file);
    expect(result).toMatchObject({ ok: true, outcome: 'stopped', stoppedAt: { kind: 'step', name: 'c' } });
    expect(bodies).toEqual([]);
  });

  it('a journal of a run that ended replays to the end', async () => {
    const file = await recorded('rc-ended', true);
    expect(file.entries.map((e) => `${e.kind}#${e.name}@${e.mark?.seq}`)).toEqual([
      'step#a@0',
      'step#b@1',
      'sleep#nap@2',
      'step#c@3',
    ]);
    bodies.length = 0;
    expect(await replayJournal(v1, file)).toMatchObject({ ok: true, outcome: 'returned' });
    expect(bodies).toEqual([]);
  });

  it.each([
    [
      'renamed',
      async (_p: unknown, ctx: JobContext) => {
        await ctx.step('a', body('a'));
        await ctx.step('b2', body('b2'));
        await ctx.sleep('nap', '2h');
      },
      'position 1: the journal recorded step "b" (version v1); this code called step "b2" (version v2)',
    ],
    [
      'removed',
      async (_p: unknown, ctx: JobContext) => {
        await ctx.step('a', body('a'));
        await ctx.sleep('nap', '2h');
      },
      'position 1: the journal recorded step "b" (version v1); this code called sleep "nap", which the journal recorded at position 2 (version v2)',
    ],
    [
      'reordered',
      async (_p: unknown, ctx: JobContext) => {
        await ctx.step('b', body('b'));
        await ctx.step('a', body('a'));
        await ctx.sleep('nap', '2h');
      },
      'position 0: the journal recorded step "a" (version v1); this code called step "b", which the journal recorded at position 1 (version v2)',
    ],
  ] as const)('a %s step diverges, with the message a worker would hold the job with', async (_what, run, message) => {
    const file = await recorded(`rc-${_what}`);
    bodies.length = 0;
    const result = await replayJournal(def(run as Handler, 'v2'), file);
    expect(result).toMatchObject({ ok: false, outcome: 'diverged' });
    expect(result.message).toContain(message);
    expect(bodies).toEqual([]);
  });

  it('a step removed at the end of a run that ended diverges: the journal recorded it', async () => {
    const file = await recorded('rc-end', true);
    const result = await replayJournal(
      def(async (_p, ctx) => {
        await ctx.step('a', body('a'));
        await ctx.step('b', body('b'));
        await ctx.sleep('nap', '2h');
        return 'done';
      }, 'v2'),
      file,
    );
    expect(result).toMatchObject({ ok: false, outcome: 'diverged', divergence: { position: 3 } });
    expect(result.message).toContain('this code ended the run without reaching it');
  });

  it('a patched() branch passes: an old run past the point takes the old path, one before it the new', async () => {
    const patched = def(async (_p, ctx) => {
      await ctx.step('a', body('a'));
      // a new step before b, for new runs only
      if (await ctx.patched('pre-b')) await ctx.step('pre-b', body('pre-b'));
      await ctx.step('b', body('b'));
      await ctx.sleep('nap', '2h');
      // a new step after the sleep: the recorded run has not passed it
      if (await ctx.patched('post-nap')) await ctx.step('post-nap', body('post-nap'));
      await ctx.step('c', body('c'));
    }, 'v2');
    const file = await recorded('rc-patched');
    bodies.length = 0;
    expect(await replayJournal(patched, file)).toMatchObject({
      ok: true,
      outcome: 'stopped',
      stoppedAt: { kind: 'step', name: 'post-nap' },
    });
    // the same code without the patch around pre-b diverges
    const unpatched = def(async (_p, ctx) => {
      await ctx.step('a', body('a'));
      await ctx.step('pre-b', body('pre-b'));
      await ctx.step('b', body('b'));
    }, 'v2');
    expect(await replayJournal(unpatched, file)).toMatchObject({ ok: false, outcome: 'diverged' });
    expect(bodies).toEqual([]);
  });

  it.each([
    ['a sleep', (ctx: JobContext) => ctx.sleep('cool-off', '1h'), { kind: 'sleep', name: 'cool-off' }],
    [
      'a signal wait with a timeout',
      (ctx: JobContext) => ctx.waitForSignal('approve', { timeout: '1d' }),
      { kind: 'wait', name: 'approve' },
    ],
  ] as const)(
    '%s added after the recorded calls stops the replay there, as a new step does',
    async (_what, added, at) => {
      const file = await recorded('rc-new-wait', true);
      bodies.length = 0;
      const v2 = def(async (_p, ctx) => {
        const a = await ctx.step('a', body('a'));
        await ctx.step('b', body('b'));
        await ctx.sleep('nap', '2h');
        await ctx.step('c', body('c'));
        await added(ctx);
        return a;
      }, 'v2');
      expect(await replayJournal(v2, file)).toMatchObject({ ok: true, outcome: 'stopped', stoppedAt: at });
      expect(bodies).toEqual([]);
    },
  );

  it('a handler that throws on recorded results fails the check', async () => {
    const file = await recorded('rc-throw');
    const result = await replayJournal(
      def(async (_p, ctx) => {
        const a = (await ctx.step('a', body('a'))) as unknown as { total: number };
        return a.total.toFixed(2);
      }),
      file,
    );
    expect(result).toMatchObject({ ok: false, outcome: 'threw' });
    expect(result.message).toContain('TypeError');
  });
});

describe('replayCheck and expectReplays', () => {
  it('replays the files of a folder, and lists each that does not replay', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orrery-journals-'));
    await writeFile(join(dir, 'one.json'), JSON.stringify(await recorded('rc-f1')));
    await writeFile(join(dir, 'two.json'), JSON.stringify(await recorded('rc-f2', true)));
    expect((await expectReplays([v1], dir)).map((r) => r.outcome)).toEqual(['stopped', 'returned']);
    const renamed = def(async (_p, ctx) => {
      await ctx.step('a', body('a'));
      await ctx.step('b-renamed', body('b'));
    });
    await expect(expectReplays([renamed], dir)).rejects.toThrow(
      /2 of 2 journals do not replay on this code:\n {2}.*one\.json \(echo\): this code does not replay/,
    );
  });

  it('a journal of a type no definition was given for fails', async () => {
    const file = await recorded('rc-type');
    const [result] = await replayCheck([], [file]);
    expect(result).toMatchObject({ ok: false, outcome: 'no-handler' });
  });

  it('a file that is not a journal is refused, naming the field', () => {
    expect(() => parseJournalExport({ format: 'orrery-journal/1', job: { id: 'x' } }, 'bad.json')).toThrow(
      'bad.json: job.type must be a string',
    );
  });
});
