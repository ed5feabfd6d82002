/** Output for people (aligned tables) and for scripts (`--json`). */

export type Row = Record<string, unknown>;

export function printRows(rows: readonly Row[], columns: readonly string[], json: boolean): void {
  if (json) return void console.log(JSON.stringify(rows, null, 2));
  if (rows.length === 0) return void console.log('(none)');
  const cells = rows.map((row) => columns.map((column) => cellText(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i]!.length)));
  const line = (values: readonly string[]) => values.map((value, i) => value.padEnd(widths[i]!)).join('  ').trimEnd();
  console.log(line(columns));
  for (const values of cells) console.log(line(values));
}

export function printRecord(record: Row, json: boolean): void {
  if (json) return void console.log(JSON.stringify(record, null, 2));
  const width = Math.max(...Object.keys(record).map((name) => name.length));
  for (const [name, value] of Object.entries(record)) console.log(`${name.padEnd(width)}  ${cellText(value)}`);
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
