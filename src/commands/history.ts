import type { Command } from 'commander';
import { eventLabel, table } from './format.ts';
import { progressLine } from '../observe/progress.ts';
import { StoreError } from '../core/errors.ts';
import { openExistingStore, storeCommand, type StoreOptions } from './store-option.ts';

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function sourceOf(metadata: string): string {
  const parsed = parseJson(metadata);
  return typeof parsed === 'object' && parsed !== null && 'source' in parsed
    ? String(parsed.source)
    : '-';
}

/** `agentcharts history <id>`: one actor's audit trail, oldest first. */
export function registerHistory(program: Command): void {
  storeCommand(program, 'history')
    .description("One actor's audit trail: every committed transition, oldest first")
    .argument('<id>', 'the actor id')
    .option('--json', 'print JSON, with each event and its metadata')
    .action(async (id: string, opts: StoreOptions & { json?: boolean }): Promise<void> => {
      const { store, where } = openExistingStore(opts);
      const progress = progressLine();
      try {
        progress.update(`loading ${id}…`);
        const actor = await store.loadActor(id);
        if (!actor) {
          throw new StoreError({
            operation: 'load',
            kind: 'not_found',
            actorId: id,
            detail: `no actor with this id in ${where}`,
          });
        }
        const rows = await store.history(id);
        progress.done();
        if (opts.json) {
          const out = {
            store: where,
            actor: {
              id: actor.id,
              machine_id: actor.machineId,
              state: actor.state,
              status: actor.status,
              version: actor.version,
              created_at: new Date(actor.createdAt).toISOString(),
              updated_at: new Date(actor.updatedAt).toISOString(),
            },
            transitions: rows.map((t) => ({
              seq: t.seq,
              at: new Date(t.at).toISOString(),
              from_state: t.fromState,
              to_state: t.toState,
              event_type: t.eventType,
              event: parseJson(t.event),
              metadata: parseJson(t.metadata),
              hash: t.hash,
            })),
          };
          process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
          return;
        }
        const lines = [
          `history ${actor.id} (${actor.machineId}, now ${actor.state}, ${actor.status}, ${rows.length} transition(s))`,
          table(
            ['seq', 'at', 'from', 'event', 'to', 'source'],
            rows.map((t) => [
              String(t.seq),
              new Date(t.at).toISOString(),
              t.fromState ?? '(new)',
              eventLabel(t.eventType),
              t.toState,
              sourceOf(t.metadata),
            ]),
            { right: [0] },
          ),
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
      } finally {
        progress.done();
        await store.close();
      }
    });
}
