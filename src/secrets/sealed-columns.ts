import { SecretBox, SecretsError } from './secret-box.js';

/**
 * A column that holds stored secrets (`SecretBox.toStored`): the modules that keep secrets declare theirs, and
 * `npm run secrets:rotate` seals every value again under the current key (`src/cli/sealed-columns.ts` lists them).
 */
export interface SealedColumn {
  table: string;
  /** The row's unique id column (the rows are walked in its order). */
  id: string;
  /** The columns `aad` reads besides the id. */
  reads: readonly string[];
  column: string;
  /** The associated data of the secret in this column of `row` (the id and `reads` columns, as text). */
  aad(row: Readonly<Record<string, string>>): string;
}

/** Runs one SQL statement: `$1`… parameters, the rows back. */
export type RunSql = (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>;

/** What resealing one column did. */
export interface ResealReport {
  table: string;
  column: string;
  /** Values sealed again (plain ones, and those under an earlier key). */
  resealed: number;
  /** Values already sealed under the current key. */
  current: number;
  /** Values that do not open (an unknown key, altered or moved): left as they are, by row id. */
  failed: { id: string; reason: string }[];
}

const BATCH = 500;
const ident = (name: string): string => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new TypeError(`not an identifier: ${name}`);
  return `"${name}"`;
};

/**
 * Seals every value of `col` again under the box's current key, a batch of rows at a time in id order. Each
 * row is written only if its value is still the one read (a concurrent change wins and is left alone).
 */
export async function resealColumn(sql: RunSql, box: SecretBox, col: SealedColumn): Promise<ResealReport> {
  box.require('secrets');
  const report: ResealReport = { table: col.table, column: col.column, resealed: 0, current: 0, failed: [] };
  const [table, id, column] = [ident(col.table), ident(col.id), ident(col.column)];
  const reads = col.reads.map(ident);
  let after = '';
  for (;;) {
    const rows = await sql(
      `SELECT ${[id, ...reads, column].join(', ')} FROM ${table}
        WHERE ${column} IS NOT NULL AND ${id}::text > $1 ORDER BY ${id}::text LIMIT ${BATCH}`,
      [after],
    );
    for (const raw of rows) {
      const row = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, String(v)]));
      const rowId = row[col.id] ?? '';
      const stored = row[col.column] ?? '';
      after = rowId;
      if (!box.needsReseal(stored)) {
        report.current++;
        continue;
      }
      const aad = col.aad(row);
      let plaintext: string;
      try {
        plaintext = box.fromStored(stored, aad);
      } catch (err) {
        if (!(err instanceof SecretsError)) throw err;
        report.failed.push({ id: rowId, reason: err.message });
        continue;
      }
      const updated = await sql(
        `UPDATE ${table} SET ${column} = $1 WHERE ${id}::text = $2 AND ${column} = $3 RETURNING 1 AS ok`,
        [box.seal(plaintext, aad), rowId, stored],
      );
      if (updated.length > 0) report.resealed++;
    }
    if (rows.length < BATCH) return report;
  }
}
