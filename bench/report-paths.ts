/**
 * The per-path tables of the report: requests per job, and sequential round trips.
 */
import { addedRoundTrips } from './goals';
import { table } from './markdown';
import type { PathResult } from './paths';

export function requestsTable(paths: PathResult[]): string {
  const measured = paths.filter((p) => p.figures);
  const keys = new Map<string, string>();
  for (const p of measured) {
    for (const op of p.figures?.operations ?? []) keys.set(`${op.actor}|${op.service}|${op.operation}`, op.actor);
  }
  const actorOrder = ['api', 'esm', 'worker', 'supervisor'];
  const sorted = [...keys.keys()].sort(
    (a, b) =>
      actorOrder.indexOf(a.split('|')[0] ?? '') - actorOrder.indexOf(b.split('|')[0] ?? '') || a.localeCompare(b),
  );
  const who: Record<string, string> = {
    api: 'API Lambda',
    worker: 'worker Lambda',
    esm: 'event source mapping',
    supervisor: 'supervisor Lambda',
  };
  const rows: (string | number)[][] = sorted.map((key) => {
    const [actor = '', service = '', operation = ''] = key.split('|');
    return [
      who[actor] ?? actor,
      `${service} ${operation}`,
      ...measured.map((p) => {
        const op = p.figures?.operations.find((o) => `${o.actor}|${o.service}|${o.operation}` === key);
        if (!op) return '–';
        return op.attemptsPerJob === op.perJob ? op.perJob : `${op.perJob} (${op.attemptsPerJob} HTTP)`;
      }),
    ];
  });
  const units = (pick: (p: PathResult) => number | string) => measured.map(pick);
  rows.push([
    'EventBridge Scheduler',
    'invocation → sqs SendMessage',
    ...units((p) => p.figures?.schedulerInvocations ?? 0),
  ]);
  rows.push(['DynamoDB', 'write units, total billed', ...units((p) => `**${p.figures?.writeUnits.total}**`)]);
  rows.push(['DynamoDB', '… of which table', ...units((p) => p.figures?.writeUnits.table ?? 0)]);
  const indexes = [...new Set(measured.flatMap((p) => Object.keys(p.figures?.writeUnits.indexes ?? {})))].sort();
  for (const index of indexes) {
    rows.push(['DynamoDB', `… of which GSI ${index}`, ...units((p) => p.figures?.writeUnits.indexes[index] ?? 0)]);
  }
  rows.push([
    'DynamoDB',
    '… of which not reported by DynamoDB Local (estimated)',
    ...units((p) => p.figures?.writeUnits.estimated ?? 0),
  ]);
  rows.push(['DynamoDB', 'read units', ...units((p) => p.figures?.readUnits.total ?? 0)]);
  if (measured.some((p) => p.statusItem)) {
    rows.push([
      'DynamoDB',
      'status item: writes, max table units of one write, largest size read back',
      ...units((p) => {
        const s = p.statusItem;
        return s ? `${s.writes}, ${s.maxTableUnits}, ${s.maxBytes} B` : '–';
      }),
    ]);
  }
  rows.push([
    'Lambda',
    'invocations: API + worker + supervisor',
    ...units((p) => {
      const inv = p.figures?.lambdaInvocations;
      return `${inv?.api} + ${inv?.worker} + ${inv?.supervisor}`;
    }),
  ]);
  rows.push(['event source mapping', 'records per worker invocation', ...units((p) => p.figures?.batchFill ?? 0)]);
  const main = table(['who', 'service / operation', ...measured.map((p) => p.label)], rows);
  const missing = paths.filter((p) => !p.figures);
  if (missing.length === 0) return main;
  const rest = table(
    ['path', 'status', 'detail'],
    missing.map((p) => [p.label, p.status, p.note ?? '']),
  );
  return `${main}\n\n${rest}`;
}

export function roundTripTable(paths: PathResult[]): string {
  const rows = paths
    .filter((p) => p.figures && p.figures.lambdaInvocations.worker > 0 && p.figures.batchFill <= 1)
    .map((p) => {
      const s = p.figures?.sequential;
      const added = addedRoundTrips(p);
      return [
        p.label,
        s?.api ?? '',
        s?.esmBefore ?? '',
        s?.workerBefore ?? '',
        s?.workerAfter ?? '',
        s?.workerAfterFailure || '–',
        s?.esmAfter ?? '',
        added?.before ?? '',
        added?.after ?? '',
      ];
    });
  return table(
    [
      'path',
      'API (in sequence)',
      'ESM receive',
      'worker before handler',
      'worker after handler',
      'worker after a failed attempt',
      'ESM delete',
      'added before',
      'added after',
    ],
    rows,
  );
}
