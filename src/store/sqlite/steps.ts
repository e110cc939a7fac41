/** Idempotent step rows in SQLite (see the Store contract). */
import { stepMiss } from '../rules.ts';
import type { NewStep, StepRow, StepStatus } from '../types.ts';
import type { Statements } from './connection.ts';

const STEP_COLUMNS = `key, actor_id AS actorId, name, status, result, started_at AS startedAt,
  finished_at AS finishedAt, attempts`;

const STEP_STATUSES: readonly StepStatus[] = ['executing', 'done', 'failed'];

export class SqliteSteps {
  constructor(private readonly sql: Statements) {}

  get(key: string): StepRow | undefined {
    return this.sql.get(`SELECT ${STEP_COLUMNS} FROM steps WHERE key = ?`).get(key) as
      StepRow | undefined;
  }

  begin(step: NewStep): { row: StepRow; created: boolean } {
    const { changes } = this.sql
      .get(
        `INSERT INTO steps (key, actor_id, name, status, result, started_at, finished_at, attempts)
         VALUES (@key, @actorId, @name, 'executing', NULL, @startedAt, NULL, 1)
         ON CONFLICT (key) DO NOTHING`,
      )
      .run(step);
    const row = this.get(step.key);
    if (row === undefined) throw stepMiss(step.key, row, 'present');
    return { row, created: changes === 1 };
  }

  finish(key: string, status: 'done' | 'failed', result: string | null, finishedAt: number): void {
    const { changes } = this.sql
      .get(
        `UPDATE steps SET status = ?, result = ?, finished_at = ?
         WHERE key = ? AND status = 'executing'`,
      )
      .run(status, result, finishedAt, key);
    if (changes === 0) throw stepMiss(key, this.get(key), 'executing');
  }

  start(key: string, startedAt: number): boolean {
    const { changes } = this.sql
      .get(
        `UPDATE steps SET attempts = 1, started_at = ?
         WHERE key = ? AND status = 'executing' AND attempts = 0`,
      )
      .run(startedAt, key);
    return changes === 1;
  }

  restart(key: string, startedAt: number): void {
    const { changes } = this.sql
      .get(
        `UPDATE steps SET status = 'executing', result = NULL, started_at = ?, finished_at = NULL,
           attempts = attempts + 1
         WHERE key = ? AND status <> 'done'`,
      )
      .run(startedAt, key);
    if (changes === 0) throw stepMiss(key, this.get(key), 'executing or failed');
  }

  list(query: { actorId?: string; status?: StepStatus }): StepRow[] {
    const filters: string[] = [];
    if (query.actorId !== undefined) filters.push('actor_id = @actorId');
    // A literal status, so `executing` (recovery) is read through its partial index.
    const status = STEP_STATUSES.find((s) => s === query.status);
    if (query.status !== undefined) filters.push(status ? `status = '${status}'` : 'FALSE');
    const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
    return this.sql
      .get(`SELECT ${STEP_COLUMNS} FROM steps ${where} ORDER BY started_at, key`)
      .all(query.actorId === undefined ? {} : { actorId: query.actorId }) as StepRow[];
  }
}
