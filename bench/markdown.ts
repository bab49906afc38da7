/** Markdown helpers for the report. */

export function table(headers: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

export const usd = (n: number) => `$${n.toFixed(2)}`;
export const kb = (bytes: number | undefined) => (bytes === undefined ? '' : `${(bytes / 1024).toFixed(0)} KB`);
