import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ENV } from '../../config';
import { type InboxSignal, journalScopeOf } from '../../core/journal';
import { journalExport } from '../../core/journal-export';
import type { JobDefinition } from '../../runtime/job-definition';
import type { ReplayResult } from '../../runtime/replay-check';
import { type CommandDef, UsageError } from '../args';
import { CliConfigError } from '../config';
import { type CommandContext, EXIT, printJson, println } from '../context';
import { CONFIG_OPTION, findDevConfig, loadDevConfig } from '../dev-config';
import { intOption } from '../input';

type Command = CommandDef<CommandContext>;

/**
 * `orrery journal export <id>`: a job's journal as a file (core/journal-export.ts), read from the
 * job table with the AWS credentials of the environment (it reads the table directly, as an
 * operator's tool: the API has no journal route). Read only: one GetItem, one Query per 1 MB of
 * entries, and one GetItem per signal wait whose outcome is the inbox's signal.
 */
export const journalExportCommand: Command = {
  path: ['journal', 'export'],
  args: ['id'],
  summary: "write a job's journal to a JSON file, for `orrery replay-check` (reads the job table directly)",
  description: [
    "Reads the job's status item and its journal from the job table (--table, or $ORRERY_TABLE) with the",
    'credentials and region of the environment (AWS_REGION, AWS_PROFILE, ...), and writes them as an',
    'orrery-journal/1 file: keep it beside your tests, and `orrery replay-check` replays new code against it.',
    'Needs dynamodb:GetItem and dynamodb:Query on the table. Writes nothing to it.',
  ].join('\n'),
  options: {
    table: { type: 'string', value: 'NAME', description: 'the job table (default: $ORRERY_TABLE)' },
    out: { type: 'string', value: 'FILE', description: 'write the file here (default: stdout)' },
  },
  examples: ['orrery journal export order-42 --table orrery-jobs --out test/journals/order-42.json'],
  async run(context, args, options) {
    const table = typeof options.table === 'string' ? options.table : context.env[ENV.table];
    if (!table) throw new UsageError('journal export: name the job table with --table (or set ORRERY_TABLE)');
    // loaded on use: no other command pays for the DynamoDB client
    const [{ createAwsClients }, { DynamoJobStore }, { DynamoJournal }] = await Promise.all([
      import('../../aws/clients'),
      import('../../aws/dynamo-job-store'),
      import('../../aws/dynamo-journal'),
    ]);
    const { dynamo } = createAwsClients();
    const store = new DynamoJobStore(dynamo, table);
    const journal = new DynamoJournal(dynamo, table);
    const job = await store.get(args.id as string);
    if (!job) throw new CliConfigError(`journal export: no job ${args.id} in table ${table}`);
    const scope = journalScopeOf(job);
    const entries = await journal.load(scope);
    // the signals a recorded outcome refers to (`received`): the wait returns their payload
    const inbox: Record<string, InboxSignal> = {};
    for (const [key, entry] of entries) {
      if (!key.startsWith('signal#') || (entry.value as { received?: unknown } | null)?.received === undefined)
        continue;
      const name = key.slice('signal#'.length);
      const signal = await journal.signal({ ...scope, name });
      if (signal) inbox[name] = signal;
    }
    const file = journalExport(job, entries, inbox);
    const text = `${JSON.stringify(file, null, 2)}\n`;
    if (typeof options.out === 'string') {
      await writeFile(resolve(context.cwd, options.out), text);
      println(context.stderr, `wrote ${file.entries.length} entries of job ${job.id} (${job.type}) to ${options.out}`);
    } else context.stdout.write(text);
    return EXIT.ok;
  },
};

/**
 * `orrery replay-check <path>`: replays the app's handlers (from its orrery.config, as
 * `orrery dev` loads it) against journal files, and exits non-zero when one diverges.
 */
export const replayCheckCommand: Command = {
  path: ['replay-check'],
  args: ['path'],
  summary: 'replay your handlers against recorded journals (files or a folder of them); fail on any divergence',
  description: [
    'Loads your job definitions from orrery.config.ts (or .mts, .mjs, .js; --config), as `orrery dev` does,',
    'and replays each journal file (what `orrery journal export` wrote) with the definition of its type.',
    'No step body runs and nothing is sent: recorded calls get their recorded results, and the replay stops',
    'at the first call the journal has no entry for. A renamed, removed or moved step, a handler that',
    'throws on recorded results, or a journal of a type the config does not define fails the check',
    `(exit ${EXIT.replayDiverged}), with the message a worker would hold the job with. Run it in CI before a deploy.`,
  ].join('\n'),
  options: {
    config: CONFIG_OPTION,
    timeout: {
      type: 'string',
      value: 'MS',
      description: 'longest a handler may take to replay one journal (default: 10000)',
    },
  },
  examples: ['orrery replay-check test/journals', 'orrery replay-check order-42.json --config jobs/orrery.config.ts'],
  async run(context, args, options) {
    const { readJournalFiles, replayCheck } = await import('../../runtime/replay-check');
    const config = findDevConfig(context.cwd, typeof options.config === 'string' ? options.config : undefined);
    const { jobs } = await loadDevConfig(config);
    const timeoutMs = intOption(options, 'timeout', 'replay-check', { min: 1, max: 600_000 });
    const files = await readJournalFiles([resolve(context.cwd, args.path as string)]);
    if (files.length === 0) throw new UsageError(`replay-check: no journal files (*.json) in ${args.path}`);
    const defs = jobs.filter((j): j is JobDefinition => 'run' in j && typeof j.run === 'function');
    const results = await replayCheck(defs, files, timeoutMs !== undefined ? { timeoutMs } : {});
    const failed = results.filter((r) => !r.ok);
    if (context.json) printJson(context.stdout, { ok: failed.length === 0, results });
    else printResults(context, results);
    return failed.length === 0 ? EXIT.ok : EXIT.replayDiverged;
  },
};

function printResults(context: CommandContext, results: readonly ReplayResult[]): void {
  const { style } = context;
  for (const r of results) {
    const mark = r.ok ? style.green('ok  ') : style.red('FAIL');
    println(context.stdout, `${mark} ${r.source ?? r.jobId} (${r.type}, job ${r.jobId}): ${r.message}`);
  }
  const failed = results.filter((r) => !r.ok).length;
  println(
    context.stdout,
    failed === 0
      ? `${results.length} journal(s) replay on this code`
      : `${failed} of ${results.length} journal(s) do not replay on this code`,
  );
}

export const replayCommands: readonly Command[] = [journalExportCommand, replayCheckCommand];
