/**
 * A role a chart names beyond the built-in four (`meta.events[type].roles`) can
 * be held by a key: the keys file accepts it, and a key holding it may send what
 * the chart gives that role and nothing else. Before, a chart could name
 * `warehouse` but no key could hold it (the keys file refused every role but the
 * four, with `invalid_union` at ""), so its event could never be sent.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createMachine } from 'xstate';
import { chartMeta } from '../src/core/meta.ts';
import { defineChart } from '../src/index.ts';
import {
  authorizeEvent,
  KeyConfigError,
  loadKeysFile,
  validateKeys,
  type ApiKey,
} from '../src/server/auth.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const dir = suiteTempDir('agentcharts-custom-roles-');

const shop = defineChart(
  createMachine({
    id: 'shop-order',
    initial: 'paid',
    meta: {
      events: {
        PACKED: { kind: 'command', roles: ['warehouse'] },
        REFUND_APPROVED: { kind: 'approval' },
        NOTE: { kind: 'command' },
      },
    },
    states: {
      paid: { on: { PACKED: 'packed', REFUND_APPROVED: 'refunded', NOTE: 'paid' } },
      packed: {},
      refunded: {},
    },
  }),
);
const event = (type: string) => {
  const info = chartMeta(shop.machine).events.find((e) => e.type === type);
  if (info === undefined) throw new Error(`no event ${type}`);
  return info;
};
const key = (role: string): ApiKey => ({
  id: `${role}-key`,
  secret: `${role}-secret-0123456789`,
  role,
});

describe('a role a chart names', () => {
  test('a key file may give it to a key, beside the built-in roles', () => {
    const file = join(dir(), 'keys.json');
    writeFileSync(
      file,
      JSON.stringify({
        keys: [
          { id: 'packer', secret: 'packer-secret-0123456789', role: 'warehouse' },
          { id: 'bot', secret: 'bot-secret-0123456789abc', role: 'agent' },
        ],
      }),
    );
    expect(loadKeysFile(file).map((k) => [k.id, k.role])).toEqual([
      ['packer', 'warehouse'],
      ['bot', 'agent'],
    ]);
  });

  test('its key sends what the chart gives that role; an agent key is refused it (the control)', () => {
    expect(authorizeEvent(key('warehouse'), event('PACKED'))).toBeUndefined();
    expect(authorizeEvent(key('agent'), event('PACKED'))).toEqual({
      reason: 'role_not_allowed',
      eventType: 'PACKED',
      roles: ['warehouse'],
    });
  });

  test('and nothing else: not an approval, not a command given to agents', () => {
    expect(authorizeEvent(key('warehouse'), event('REFUND_APPROVED'))).toMatchObject({
      reason: 'approval_requires_approver_key',
    });
    expect(authorizeEvent(key('warehouse'), event('NOTE'))).toMatchObject({
      reason: 'role_not_allowed',
    });
    expect(authorizeEvent(key('approver'), event('REFUND_APPROVED'))).toBeUndefined();
  });

  test('a role that is no name is refused, naming the key and field and what a role may be, never the value', () => {
    const file = join(dir(), 'bad-keys.json');
    writeFileSync(
      file,
      JSON.stringify([{ id: 'x', secret: 'x-secret-0123456789abc', role: 'Sup3r Secret!' }]),
    );
    const error = (() => {
      try {
        loadKeysFile(file);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(KeyConfigError);
    expect(error).toMatchObject({ field: '0.role' });
    expect((error as Error).message).toMatch(
      /expected one of agent, approver, leader, operator, or a role a chart names/,
    );
    expect((error as Error).message).not.toContain('Sup3r');
    expect(() => validateKeys([{ ...key('agent'), role: 'WAREHOUSE' }])).toThrow(
      /keys\[0\]\.role.*expected one of/,
    );
  });

  test('a keys object with a bad field names that field, not the whole file', () => {
    const file = join(dir(), 'short-secret.json');
    writeFileSync(file, JSON.stringify({ keys: [{ id: 'x', secret: 'short', role: 'agent' }] }));
    expect(() => loadKeysFile(file)).toThrow(/at "keys\.0\.secret": too_small/);
  });
});
