/**
 * Replaying one logged row: the step the live actor took, decided again with the
 * same function (`advance`) from the row's event, source and time. `verify` checks
 * the log with it and time travel rebuilds past snapshots with it, so neither can
 * drift from what the send path does.
 */
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import { stateLabel } from '../core/state.ts';
import type { OutgoingMessage, TransitionRow } from '../store/types.ts';
import { advance, type Delivery } from './advance.ts';
import { EMPTY_LEDGER, isRank, pendingTimer, type Ledger } from './ledger.ts';
import { bySystemIdMarks } from './posted.ts';

/** What an actor is after some rows of its log. */
export interface Replayed {
  snapshot: AnyMachineSnapshot | undefined;
  ledger: Ledger;
}

export type RowReplay =
  | {
      ok: true;
      snapshot: AnyMachineSnapshot;
      ledger: Ledger;
      messages: OutgoingMessage[];
      /** The messages as agentcharts 0.1.0 ordered them, where that differs. */
      legacyMessages?: OutgoingMessage[] | undefined;
    }
  | { ok: false; detail: string };

/** What a row's metadata says about where its event came from. */
export interface RowSource {
  source?: unknown;
  timer?: unknown;
  invoke?: unknown;
  dropped?: unknown;
  relay?: unknown;
  sync?: unknown;
  /** The system ids the step found elsewhere in its tree (Step.systemIds). */
  systemIds?: unknown;
  /** A root's own system id, on its creation row (Ledger.systemId). */
  rootSystemId?: unknown;
  /** The lives of the actors the step sent to by system id (Step.lives). */
  lives?: unknown;
  /** The places of its messages sent by system id (./posted.ts, bySystemIdMarks). */
  bySystemId?: unknown;
  /** Where the step's timers were armed among its tree's (Rank, ./ledger.ts), when it armed one. */
  base?: unknown;
}

/**
 * A record a row's metadata holds (RowSource.systemIds, RowSource.lives) as the
 * map the step's facts take: its entries whose values are of `kind`.
 */
function recorded<T extends 'string' | 'number'>(
  value: unknown,
  kind: T,
): Map<string, T extends 'string' ? string : number> | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const found = new Map<string, T extends 'string' ? string : number>();
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry === kind) found.set(key, entry as T extends 'string' ? string : number);
  }
  return found;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Replays one row on `state` (see the module comment). */
export function replayRow(
  machine: AnyStateMachine,
  actorId: string,
  parentId: string | undefined,
  state: Replayed,
  row: TransitionRow,
  event: EventObject,
): RowReplay {
  const meta = (parseJson(row.metadata) ?? {}) as RowSource;
  const delivery = deliveryOf(state, row, event, meta);
  let step: ReturnType<typeof advance>;
  try {
    step = advance({
      machine,
      actorId,
      parentId,
      seq: row.seq,
      now: row.at,
      snapshot: state.snapshot,
      ledger: state.ledger,
      event,
      delivery,
      system: recorded(meta.systemIds, 'string'),
      lives: recorded(meta.lives, 'number'),
      base: isRank(meta.base) ? meta.base : undefined,
    });
  } catch (error) {
    return { ok: false, detail: `replay threw: ${error instanceof Error ? error.name : 'error'}` };
  }
  const where = state.snapshot ? stateLabel(state.snapshot.value) : '(new)';
  if (step.kind === 'refused') {
    return { ok: false, detail: `the chart does not accept "${event.type}" in "${where}"` };
  }
  if (step.kind === 'gone') {
    return {
      ok: false,
      detail: `a ${delivery.source} row with nothing to deliver: ${step.reason}`,
    };
  }
  const dropped = step.outcome === 'dropped';
  if (dropped !== (meta.dropped === true)) {
    return {
      ok: false,
      detail: dropped
        ? `"${event.type}" is not taken in "${where}", but the row records it as taken`
        : `"${event.type}" is taken in "${where}", but the row records it as dropped`,
    };
  }
  if ((step.outcome === 'relayed') !== (meta.relay !== undefined)) {
    return { ok: false, detail: 'the row and the replay disagree on a relayed delayed send' };
  }
  // Which messages went by system id (read back by the courier after a stop); a row
  // written before they were recorded has none.
  if (meta.bySystemId !== undefined) {
    const marks = bySystemIdMarks(step.effects.messages) ?? [];
    if (JSON.stringify(meta.bySystemId) !== JSON.stringify(marks)) {
      return {
        ok: false,
        detail: 'the row and the replay disagree on the messages sent by system id',
      };
    }
  }
  return {
    ok: true,
    snapshot: step.next,
    ledger: step.effects.ledger,
    messages: step.effects.messages,
    legacyMessages: step.effects.legacyMessages,
  };
}

function deliveryOf(
  state: Replayed,
  row: TransitionRow,
  event: EventObject,
  meta: RowSource,
): Delivery {
  if (event.type === 'xstate.init' && (state.snapshot === undefined || row.seq === 1)) {
    return {
      source: 'create',
      sync: meta.source === 'spawn' && meta.sync === true,
      systemId: typeof meta.rootSystemId === 'string' ? meta.rootSystemId : undefined,
    };
  }
  switch (meta.source) {
    case 'timer': {
      if (typeof meta.timer === 'string') return { source: 'timer', key: meta.timer };
      // Rows written before timers had keys in the log: the earliest pending timer of
      // that event; an `after` the ledger does not know is replayed as a message.
      const legacy = [...state.ledger.timers]
        .sort((a, b) => a.due - b.due)
        .find((t) => t.event.type === event.type);
      return legacy && pendingTimer(state.ledger, legacy.key)
        ? { source: 'timer', key: legacy.key }
        : { source: 'message' };
    }
    case 'invoke':
      return typeof meta.invoke === 'string'
        ? { source: 'invoke', key: meta.invoke }
        : { source: 'message' };
    case 'message':
      return { source: 'message' };
    case 'spawn':
      return { source: 'spawn', sync: meta.sync === true };
    case 'recover':
      return { source: 'recover' };
    default:
      return { source: 'send' };
  }
}

/** Where replay starts: nothing yet. */
export const START: Replayed = { snapshot: undefined, ledger: EMPTY_LEDGER };

/** The parent an actor's creation row names (a spawned child), if any. */
export function parentOfLog(rows: readonly TransitionRow[]): string | undefined {
  const meta = parseJson(rows[0]?.metadata ?? '') as
    { source?: unknown; parent?: unknown } | undefined;
  return meta?.source === 'spawn' && typeof meta.parent === 'string' ? meta.parent : undefined;
}
