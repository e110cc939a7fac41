/**
 * A path to draw on a chart (`agentcharts diagram --path <file>`): read from a
 * file — the JSON `agentcharts check --json` prints (its first counterexample for
 * the chart), one property's `counterexample`, `{ events }`, or an array of events —
 * and replayed on the chart from its initial state, so that every state it passes
 * through is known and an event the chart does not accept there is refused.
 */
import { readFileSync } from 'node:fs';
import type { AnyStateMachine, EventObject, StateValue } from 'xstate';
import { leafPaths } from '../core/state.ts';
import { mermaidIdsByPath } from '../server/diagram.ts';
import { replayEvents, type Replay } from '../check/replay.ts';
import type { ChartCheckJson } from '../check/format.ts';
import { CliOptionError } from './paths.ts';

const isEvent = (v: unknown): v is EventObject =>
  typeof v === 'object' && v !== null && typeof (v as { type?: unknown }).type === 'string';

/** The first counterexample for `machineId` in a check's JSON (children included). */
function fromCheck(charts: readonly ChartCheckJson[], machineId: string): unknown {
  for (const chart of charts) {
    if (chart.machineId === machineId) {
      const found = chart.properties.find((p) => p.counterexample !== null);
      if (found) return found.counterexample?.events;
    }
    const inChild = fromCheck(chart.children, machineId);
    if (inChild) return inChild;
  }
  return undefined;
}

/** The events of a path file, for the machine `machineId`. */
export function readPathEvents(file: string, machineId: string): EventObject[] {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (error) {
    const detail =
      (error as { code?: string }).code === 'ENOENT' ? 'no such file' : 'not valid JSON';
    throw new CliOptionError('--path', `${file}: ${detail}`);
  }
  const d = data as {
    charts?: ChartCheckJson[];
    counterexample?: { events?: unknown } | null;
    events?: unknown;
  } | null;
  const events: unknown = Array.isArray(data)
    ? data
    : Array.isArray(d?.charts)
      ? fromCheck(d.charts, machineId)
      : (d?.counterexample?.events ?? d?.events);
  if (events === undefined && Array.isArray(d?.charts)) {
    throw new CliOptionError('--path', `${file} has no counterexample for machine "${machineId}"`);
  }
  if (!Array.isArray(events) || !events.every(isEvent)) {
    throw new CliOptionError(
      '--path',
      `${file} holds no path: expected the output of agentcharts check --json, a counterexample, { events }, or an array of events`,
    );
  }
  return events;
}

/**
 * Replays `events` on the machine from its initial state; an event the chart does
 * not accept where the path sends it is a `--path` error.
 */
export function replayPathEvents(
  machine: AnyStateMachine,
  input: unknown,
  events: readonly EventObject[],
): Replay {
  const replay = replayEvents(machine, input, events);
  if (replay.refused) {
    const { index, label, state } = replay.refused;
    throw new CliOptionError(
      '--path',
      `event #${index + 1} (${label}) is not accepted in state "${state}" of machine "${machine.id}"`,
    );
  }
  return replay;
}

/**
 * The diagram with the path drawn on it: the states it passes through outlined,
 * the state it ends in filled red, and a note on that state listing the events
 * (Mermaid's state diagrams cannot style single edges).
 */
export function highlightPath(machine: AnyStateMachine, diagram: string, path: Replay): string {
  const ids = mermaidIdsByPath(machine, diagram);
  const idsOf = (v: StateValue) =>
    leafPaths(v)
      .map((p) => ids.get(p))
      .filter((id): id is string => id !== undefined);
  const end = idsOf(path.values.at(-1) ?? '');
  const passed = [...new Set(path.values.slice(0, -1).flatMap(idsOf))].filter(
    (id) => !end.includes(id),
  );
  const lines = [diagram.trimEnd()];
  if (passed.length > 0) {
    lines.push(
      '  classDef pathPassed fill:#fee2e2,stroke:#b91c1c,stroke-width:3px,stroke-dasharray:4 2,color:#111827',
      `  class ${passed.join(',')} pathPassed`,
    );
  }
  if (end.length > 0) {
    lines.push(
      '  classDef pathEnd fill:#dc2626,stroke:#111827,stroke-width:4px,color:#ffffff,font-weight:bold',
      `  class ${end.join(',')} pathEnd`,
      `  note right of ${end[0] as string}`,
      `    path: ${path.labels.length === 0 ? '(initial)' : path.labels.join(' → ')}`,
      '  end note',
    );
  }
  return `${lines.join('\n')}\n`;
}
