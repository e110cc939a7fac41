/** Idempotent step rows in PostgreSQL (see the Store contract). */
import * as rules from '../rules.ts';
import type * as S from '../types.ts';
import type { PostgresConnection } from './connection.ts';
import { whereClause } from './filters.ts';

const STEP_COLUMNS = `key, actor_id AS "actorId", name, status, result, started_at AS "startedAt",
  finished_at AS "finishedAt", attempts`;

export class PostgresSteps {
  constructor(private readonly conn: PostgresConnection) {}

  async get(key: string): Promise<S.StepRow | undefined> {
    const rows = await this.conn.query<S.StepRow>({
      name: 'ac_step',
      text: `SELECT ${STEP_COLUMNS} FROM steps WHERE key = $1`,
      values: [key],
    });
    return rows[0];
  }

  async begin(step: S.NewStep): Promise<{ row: S.StepRow; created: boolean }> {
    const inserted = await this.conn.query<S.StepRow>(
      `INSERT INTO steps (key, actor_id, name, status, result, started_at, finished_at, attempts)
       VALUES ($1, $2, $3, 'executing', NULL, $4, NULL, 1)
       ON CONFLICT (key) DO NOTHING RETURNING ${STEP_COLUMNS}`,
      [step.key, step.actorId, step.name, step.startedAt],
    );
    if (inserted[0] !== undefined) return { row: inserted[0], created: true };
    const row = await this.get(step.key);
    if (row === undefined) throw rules.stepMiss(step.key, row, 'present');
    return { row, created: false };
  }

  async finish(key: string, status: S.StepEnd, result: string | null, at: number): Promise<void> {
    const updated = await this.conn.change(
      `UPDATE steps SET status = $1, result = $2, finished_at = $3
       WHERE key = $4 AND status = 'executing'`,
      [status, result, at, key],
    );
    if (updated === 0) throw rules.stepMiss(key, await this.get(key), 'executing');
  }

  async start(key: string, startedAt: number): Promise<boolean> {
    const updated = await this.conn.change(
      `UPDATE steps SET attempts = 1, started_at = $1
       WHERE key = $2 AND status = 'executing' AND attempts = 0`,
      [startedAt, key],
    );
    return updated === 1;
  }

  async restart(key: string, startedAt: number): Promise<void> {
    const updated = await this.conn.change(
      `UPDATE steps SET status = 'executing', result = NULL, started_at = $1, finished_at = NULL,
         attempts = attempts + 1
       WHERE key = $2 AND status <> 'done'`,
      [startedAt, key],
    );
    if (updated === 0) throw rules.stepMiss(key, await this.get(key), 'executing or failed');
  }

  list(query: { actorId?: string; status?: S.StepStatus }): Promise<S.StepRow[]> {
    const values: unknown[] = [];
    const where = whereClause(values, [
      ['actor_id =', query.actorId],
      ['status =', query.status],
    ]);
    return this.conn.query<S.StepRow>(
      `SELECT ${STEP_COLUMNS} FROM steps ${where} ORDER BY started_at, key`,
      values,
    );
  }
}
