/**
 * Released migrations execute exactly the text they always did: a database
 * migrated by a release and one migrated by this build must end the same, so a
 * released migration is never edited, only followed by a new one. Each text is
 * pinned by its SHA-256 (first 16 hex digits). A new migration adds its pin.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { POSTGRES_MIGRATIONS } from '../src/store/postgres/schema.ts';
import { SQLITE_MIGRATIONS } from '../src/store/sqlite/schema.ts';

const pin = (sql: string) => createHash('sha256').update(sql).digest('hex').slice(0, 16);

const PINNED = {
  SQLite: {
    migrations: SQLITE_MIGRATIONS,
    pins: [
      'e622ff88aeff0524',
      'dd08e1425cf050ed',
      'bd17eaa230959a0a',
      '7a73fe842d60013f',
      'f90fad51cf5a9964',
      '7e4d6bf1309fcc9b',
      'ab148d0daa015a8c',
      'bf42b29c324834cf',
    ],
  },
  PostgreSQL: {
    migrations: POSTGRES_MIGRATIONS,
    pins: [
      'ed4d73900f7d4acc',
      '3e5bcce535d2623c',
      '2fd87d6eca5794a6',
      '9d2ef7690879738b',
      'e2362d3eb2dbd133',
      '463544423218d200',
      '0a6e6da2bfafdddf',
      '357ab86467dc6b3b',
    ],
  },
};

describe.each(Object.entries(PINNED))('%s migrations', (_name, { migrations, pins }) => {
  it('are the pinned texts, one pin each', () => {
    expect(migrations.map((m) => pin(m.sql))).toEqual(pins);
  });

  it('would notice an edit of a single character (the control)', () => {
    const [first] = migrations;
    expect(pin(`${first?.sql ?? ''} `)).not.toBe(pins[0]);
  });
});
