/**
 * Human-readable output: colours (only on a TTY, never with NO_COLOR), aligned tables and
 * job details. Machine output (`--json`) does not come through here.
 */
import type { ApiIssue, JobSummary, JobView, OrreryApiError } from '../client';

/** Where output goes; a Node stream fits. */
export interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface Style {
  enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  state(state: string, text?: string): string;
}

const STATE_COLORS: Record<string, number> = {
  succeeded: 32,
  failed: 31,
  held: 91,
  retrying: 33,
  running: 36,
  queued: 34,
  scheduled: 35,
  cancelled: 90,
  enabled: 32,
  paused: 33,
};

/**
 * Colour only when writing to a terminal, and never when `NO_COLOR` is set (any non-empty
 * value, per no-color.org), `TERM=dumb`, or `--no-color` was given.
 */
export function wantsColor(output: Output, env: Record<string, string | undefined>, noColorFlag: boolean): boolean {
  return !noColorFlag && output.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}

export function createStyle(enabled: boolean): Style {
  const paint = (code: number) => (text: string) => (enabled ? `\u001b[${code}m${text}\u001b[0m` : text);
  return {
    enabled,
    bold: paint(1),
    dim: paint(2),
    red: paint(31),
    green: paint(32),
    yellow: paint(33),
    state: (state, text = state) => paint(STATE_COLORS[state] ?? 39)(text),
  };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching ANSI escape sequences is the point
const ANSI = /\u001b\[[0-9;]*m/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** Length as shown on a terminal (escape sequences take no room). */
export function visibleLength(text: string): number {
  return stripAnsi(text).length;
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function table(headers: string[], rows: string[][], style: Style): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => visibleLength(row[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell + ' '.repeat((widths[i] ?? 0) - visibleLength(cell))))
      .join('  ')
      .trimEnd();
  return [style.bold(line(headers)), ...rows.map(line)].join('\n');
}

/** `key  value` lines with the keys aligned; entries with an undefined value are left out. */
export function details(entries: [string, string | undefined][], style: Style): string {
  const shown = entries.filter((entry): entry is [string, string] => entry[1] !== undefined);
  const width = Math.max(0, ...shown.map(([key]) => key.length));
  return shown.map(([key, value]) => `${style.dim(key.padEnd(width))}  ${value}`).join('\n');
}

/** Compact JSON, cut to `max` characters. */
export function shortJson(value: unknown, max = 200): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * The line of a workflow that ended an attempt to wait (`ctx.waitForSignal`, `ctx.sleep`): its
 * `runAt` is then the wait's deadline, not a time it is due to run.
 */
function wakeLine(job: JobView): [string, string] | undefined {
  const wait = job.waitingFor;
  if (job.state !== 'waiting' || !wait?.until) return undefined;
  if (wait.kind === 'signal') return ['waiting for', `signal "${wait.key}" until ${wait.until}`];
  if (wait.kind === 'sleep') return ['sleeping', `until ${wait.until} (sleep "${wait.key}")`];
  return undefined;
}

export function formatJob(job: JobView, style: Style): string {
  const wake = wakeLine(job);
  const lines = details(
    [
      ['id', style.bold(job.id)],
      ['type', job.type],
      ['state', style.state(job.state)],
      ['attempts', `${job.attempts} of ${job.maxAttempts}`],
      ['priority', job.priority === undefined ? undefined : String(job.priority)],
      ['created', job.createdAt],
      ['updated', job.updatedAt],
      wake ?? ['run at', job.runAt],
      ['started', job.startedAt ?? undefined],
      ['finished', job.finishedAt ?? undefined],
      [
        'progress',
        job.progress ? `${job.progress.percent}%${job.progress.detail ? ` ${job.progress.detail}` : ''}` : undefined,
      ],
      ['payload', shortJson(job.payload)],
      ['result', job.result === null || job.result === undefined ? undefined : shortJson(job.result)],
      ['last error', job.lastError ? style.red(`${job.lastError.name}: ${job.lastError.message}`) : undefined],
      [
        'parents',
        job.parents?.map((p) => (p.onParentFailure === 'fail' ? p.id : `${p.id} (${p.onParentFailure})`)).join(', ') ||
          undefined,
      ],
      ['waiting for', job.pendingParents === undefined ? undefined : `${job.pendingParents} parent(s)`],
      ['invoked by', job.invokedBy?.join(', ') || undefined],
      ['children', job.children?.filter((c) => !job.invokedBy?.includes(c)).join(', ') || undefined],
    ],
    style,
  );
  if (job.errors.length === 0) return lines;
  const history = job.errors.map(
    (e) => `  ${style.dim(`#${e.attempt}`)} ${e.at}  ${e.reason.padEnd(8)} ${e.name}: ${e.message}`,
  );
  return `${lines}\n${style.dim('errors')}\n${history.join('\n')}`;
}

/** Short age of an ISO time relative to `now`: `12s`, `5m`, `3h`, `2d`. */
export function age(iso: string, now: number): string {
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  const s = Math.round(Math.abs(ms) / 1000);
  const text =
    s < 60
      ? `${s}s`
      : s < 3600
        ? `${Math.floor(s / 60)}m`
        : s < 86_400
          ? `${Math.floor(s / 3600)}h`
          : `${Math.floor(s / 86_400)}d`;
  return ms < 0 ? `in ${text}` : `${text} ago`;
}

export function jobTable(jobs: readonly JobSummary[], style: Style, now: number): string {
  return table(
    ['ID', 'TYPE', 'STATE', 'ATTEMPTS', 'CREATED', 'FINISHED'],
    jobs.map((job) => [
      job.id,
      job.type,
      style.state(job.state),
      String(job.attempts),
      job.createdAt,
      job.finishedAt ? age(job.finishedAt, now) : style.dim('-'),
    ]),
    style,
  );
}

function issueLines(issues: readonly ApiIssue[]): string[] {
  return issues.map((issue) => `  - ${issue.path}: ${issue.message}`);
}

/** `error: invalid_payload (HTTP 400): message`, then the issues and the request id. */
export function formatApiError(error: OrreryApiError, style: Style): string {
  const lines = [
    `${style.red('error')}: ${style.bold(error.code)} (HTTP ${error.status}): ${error.message}`,
    ...issueLines(error.issues),
  ];
  // a 403 of the API's grants: what was refused, on which type (the Function URL's own 403 has neither)
  const { action, control, type } = error.details as { action?: unknown; control?: unknown; type?: unknown };
  if (error.status === 403 && typeof action === 'string') {
    const what = typeof control === 'string' ? `${action} (${control})` : action;
    lines.push(`  not granted: ${what}${typeof type === 'string' ? ` on job type ${type}` : ''}`);
  }
  if (error.requestId) lines.push(style.dim(`  request id: ${error.requestId}`));
  return lines.join('\n');
}
