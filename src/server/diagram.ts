/**
 * The chart of an actor as Mermaid text with its current state highlighted: the
 * diagram `toMermaid` draws, plus a `classDef` and a `class` line for the active
 * leaf states (Mermaid styles atomic states only, so parents are not marked).
 */
import type { AnyStateMachine, StateValue } from 'xstate';
import { toMermaid } from '../inspect/mermaid.ts';
import { leafPaths } from '../core/state.ts';

/** A quoted name as the chart has it (`toMermaid` writes `<` and `>` as entity codes). */
function unescapeMarkup(text: string): string {
  return text.replace(/#lt;/g, '<').replace(/#gt;/g, '>');
}

/**
 * Maps each declared state's dotted path to its Mermaid id by reading the
 * declarations `toMermaid` writes (`state X {`, `state "key" as X`, bare `X`,
 * closing `}`), so the ids stay whatever the generator chose.
 */
export function mermaidIdsByPath(machine: AnyStateMachine, diagram: string): Map<string, string> {
  const ids = new Map<string, string>();
  const stack: Array<string | null> = [];
  const path = () => stack.filter((s): s is string => s !== null);
  for (const raw of diagram.split('\n')) {
    const line = raw.trim();
    if (line === '}') {
      stack.pop();
      continue;
    }
    const composite = /^state (?:"([^"]*)" as )?([A-Za-z][A-Za-z0-9_]*) \{$/.exec(line);
    if (composite) {
      const id = composite[2] as string;
      const key = composite[1] !== undefined ? unescapeMarkup(composite[1]) : id;
      // The wrapper `toMermaid` adds around a machine with root-level edges is not a state.
      const wrapper = stack.length === 0 && key === machine.id && id.endsWith('_machine');
      if (!wrapper) ids.set([...path(), key].join('.'), id);
      stack.push(wrapper ? null : key);
      continue;
    }
    const aliased = /^state "([^"]*)" as ([A-Za-z][A-Za-z0-9_]*)$/.exec(line);
    if (aliased) {
      ids.set([...path(), unescapeMarkup(aliased[1] as string)].join('.'), aliased[2] as string);
      continue;
    }
    if (/^[A-Za-z][A-Za-z0-9_]*$/.test(line) && line !== 'stateDiagram-v2') {
      ids.set([...path(), line].join('.'), line);
    }
  }
  return ids;
}

/**
 * Mermaid text of the chart with the active states drawn in `color`, and the
 * states of `visited` (the path so far, when time travelling) outlined.
 */
export function highlightedDiagram(
  machine: AnyStateMachine,
  value: StateValue,
  color: string,
  visited: readonly StateValue[] = [],
): { mermaid: string; active: string[]; visited: string[] } {
  // Timer edges carry the chart's event names (RETRY, TIMEOUT), as the trail does.
  const diagram = toMermaid(machine, { timerEvents: true });
  const ids = mermaidIdsByPath(machine, diagram);
  const idsOf = (v: StateValue) =>
    leafPaths(v)
      .map((p) => ids.get(p))
      .filter((id): id is string => id !== undefined);
  const active = idsOf(value);
  const activeSet = new Set(active);
  const past = [...new Set(visited.flatMap(idsOf))].filter((id) => !activeSet.has(id));
  if (active.length === 0 && past.length === 0) return { mermaid: diagram, active, visited: past };
  const safeColor = /^#[0-9a-fA-F]{6}$/.test(color) ? color : '#6b7280';
  const lines = [diagram.trimEnd()];
  if (past.length > 0) {
    lines.push(
      '  classDef visited fill:#dbeafe,stroke:#1d4ed8,stroke-width:3px,stroke-dasharray:4 2,color:#111827',
      `  class ${past.join(',')} visited`,
    );
  }
  if (active.length > 0) {
    lines.push(
      `  classDef current fill:${safeColor},stroke:#111827,stroke-width:4px,color:#ffffff,font-weight:bold`,
      `  class ${active.join(',')} current`,
    );
  }
  return { mermaid: `${lines.join('\n')}\n`, active, visited: past };
}
