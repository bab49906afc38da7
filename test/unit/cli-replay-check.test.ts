/**
 * `orrery replay-check` in-process (`main(argv, io)`): journals that the `checkout` job recorded
 * on version 1 (through the worker, on the in-memory ports, written as journal files) replayed by
 * each version of the job, loaded from an orrery.config.ts as `orrery dev` loads it. A renamed,
 * removed or reordered step exits 5 and names the journal, the position and both versions; an
 * unchanged handler and a `patched()` branch exit 0. No step body runs.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliIo, main } from '../../shared/cli/main';
import { journalExport } from '../../shared/core/journal-export';
import { incarnationOf } from '../../shared/core/table';
import { sqsEvent } from '../support/fakes';
import { checkout, checkoutSpec, stepBodies } from '../support/replay/checkout-jobs';
import { echoJob, harness, messageFor, T0 } from './worker-harness';

const CONFIGS = join(import.meta.dirname, '..', 'support', 'replay');
let journals: string;

/** Collects what the CLI writes. */
function capture() {
  const output = {
    text: '',
    isTTY: false,
    columns: 200,
    write(chunk: string) {
      output.text += chunk;
      return true;
    },
  };
  return output;
}

/** Runs the CLI in the fixtures' folder; returns its exit code and what it printed. */
async function cli(argv: string[]) {
  const stdout = capture();
  const stderr = capture();
  const io: CliIo = { stdout, stderr, env: {}, cwd: CONFIGS, readStdin: async () => '' };
  const code = await main(argv, io);
  return { code, out: stdout.text, err: stderr.text };
}

beforeAll(async () => {
  journals = mkdtempSync(join(tmpdir(), 'orrery-replay-cli-'));
  // two runs of v1: one asleep in its cool-off, one that ended
  for (const [id, ended] of [
    ['order-1', false],
    ['order-2', true],
  ] as const) {
    const h = harness({ spec: checkoutSpec, run: checkout('v1').run, version: 'checkout-v1' });
    h.store.seed(echoJob(id, { type: 'checkout', payload: { order: id } }));
    const deliver = (n: number) => h.worker(sqsEvent(messageFor(id, { type: 'checkout', messageId: `m-${id}-${n}` })));
    await deliver(1);
    if (ended) {
      h.clock.advance(2 * 3_600_000);
      await deliver(2);
    }
    const job = h.store.peek(id);
    if (!job) throw new Error(`no job ${id}`);
    expect(job.state).toBe(ended ? 'succeeded' : 'waiting');
    const entries = await h.journal.load({ jobId: id, incarnation: incarnationOf(new Date(T0).toISOString()) });
    writeFileSync(join(journals, `${id}.json`), JSON.stringify(journalExport(job, entries), null, 2));
  }
}, 30_000);

describe('orrery replay-check', () => {
  it.each(['v1', 'patched'] as const)(
    '%s replays every journal: exit 0',
    async (variant) => {
      stepBodies.length = 0;
      const { code, out } = await cli(['replay-check', journals, '--config', `orrery.${variant}.config.ts`]);
      expect(out).toContain('2 journal(s) replay on this code');
      expect(code).toBe(0);
      expect(stepBodies).toEqual([]);
    },
    30_000,
  );

  it.each([
    [
      'renamed',
      'position 1: the journal recorded step "charge" (version checkout-v1); this code called step "charge-card"',
    ],
    [
      'removed',
      'position 1: the journal recorded step "charge" (version checkout-v1); this code called sleep "cool-off"',
    ],
    [
      'reordered',
      'position 0: the journal recorded step "reserve" (version checkout-v1); this code called step "charge"',
    ],
  ] as const)(
    'a %s step fails the check: exit 5, naming the journal, the position and both versions',
    async (variant, names) => {
      stepBodies.length = 0;
      const { code, out } = await cli(['replay-check', journals, '--config', `orrery.${variant}.config.ts`]);
      expect(code).toBe(5);
      expect(out).toContain('2 of 2 journal(s) do not replay on this code');
      expect(out).toMatch(/FAIL .*order-1\.json \(checkout, job order-1\)/);
      expect(out).toContain(names);
      expect(out).toContain(`(version checkout-${variant})`);
      expect(stepBodies).toEqual([]);
    },
    30_000,
  );

  it('--json prints each result', async () => {
    const { code, out } = await cli(['replay-check', journals, '--config', 'orrery.renamed.config.ts', '--json']);
    expect(code).toBe(5);
    const parsed = JSON.parse(out) as { ok: boolean; results: { outcome: string; divergence?: unknown }[] };
    expect(parsed.ok).toBe(false);
    expect(parsed.results[0]).toMatchObject({
      outcome: 'diverged',
      divergence: { position: 1, recorded: { kind: 'step', name: 'charge', version: 'checkout-v1' } },
    });
  }, 30_000);

  it('a path with no journal file is a usage error', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'orrery-replay-empty-'));
    const { code, err } = await cli(['replay-check', empty, '--config', 'orrery.v1.config.ts']);
    expect(code).toBe(2);
    expect(err).toContain('no journal files');
  });
});
