import { isChartDefinition, type ChartDefinition } from '../core/chart.ts';
import { childMachines } from '../durable/actor-kinds.ts';
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';
import { AgentchartsError } from '../core/errors.ts';
import { guardText } from '../core/guard-text.ts';
import { EXPECTED, isMachine, requireArg, requireOptions } from '../core/options.ts';

/** Options of {@link toMermaid}. */
export interface MermaidOptions {
  /** Layout direction (`direction LR`); Mermaid's default (top to bottom) when omitted. */
  direction?: 'TB' | 'BT' | 'LR' | 'RL';
  /**
   * Draw the child machines the chart invokes or spawns, each as a composite
   * state of its own beside the chart (default true).
   */
  children?: boolean;
  /** Prefix of every state id (a child drawn inside its parent's diagram). */
  idPrefix?: string;
  /**
   * Label an `after` edge with the event name the chart gives it in its
   * transition `meta.event` (`RETRY (after retryBackoff)`), as the log and the
   * dashboard name it. Default true; false labels it with the delay alone.
   */
  timerEvents?: boolean;
}

// Words Mermaid's state diagram lexer reads as keywords, not state ids.
const RESERVED = new Set(
  [
    'state',
    'note',
    'default',
    'class',
    'classdef',
    'style',
    'click',
    'direction',
    'end',
    'as',
    'hide',
    'scale',
    'acctitle',
    'accdescr',
    'left',
    'right',
    'of',
    'over',
    'tb',
    'bt',
    'lr',
    'rl',
  ].map((w) => w.toLowerCase()),
);
const SAFE_ID = /^[A-Za-z][A-Za-z0-9_]*$/;

function children(node: AnyStateNode): AnyStateNode[] {
  return Object.values(node.states);
}

function descendants(node: AnyStateNode): AnyStateNode[] {
  return children(node).flatMap((c) => [c, ...descendants(c)]);
}

/** Mermaid ids: the state's key where it is unique and safe, else its sanitised path. */
function assignIds(
  machine: AnyStateMachine,
  rootId: string,
  prefix: string,
): Map<AnyStateNode, string> {
  const nodes = descendants(machine.root);
  const keyCount = new Map<string, number>();
  for (const n of nodes) keyCount.set(n.key, (keyCount.get(n.key) ?? 0) + 1);
  const ids = new Map<AnyStateNode, string>();
  const used = new Set<string>([rootId]);
  for (const n of nodes) {
    const keyOk =
      SAFE_ID.test(n.key) &&
      keyCount.get(n.key) === 1 &&
      !RESERVED.has(n.key.toLowerCase()) &&
      n.type !== 'history';
    let id = keyOk ? n.key : n.path.join('_').replace(/[^A-Za-z0-9_]/g, '_');
    if (!/^[A-Za-z]/.test(id) || RESERVED.has(id.toLowerCase())) id = `s_${id}`;
    id = `${prefix}${id}`;
    let unique = id;
    for (let i = 2; used.has(unique); i++) unique = `${id}_${i}`;
    used.add(unique);
    ids.set(n, unique);
  }
  return ids;
}

function delayText(delay: unknown): string {
  if (typeof delay === 'number') return `${delay}ms`;
  if (typeof delay === 'string') return delay;
  if (typeof delay === 'function' && delay.name) return delay.name;
  return 'delay';
}

/** The event part of a transition label, from its XState event descriptor. */
function eventText(
  t: AnyTransitionDefinition & { delay?: unknown; meta?: unknown },
  always: boolean,
  timerEvents = false,
): string {
  if (always) return 'always';
  const type = t.eventType;
  if (type.startsWith('xstate.after.')) {
    const named = (t.meta as { event?: unknown } | undefined)?.event;
    return timerEvents && typeof named === 'string' && named !== ''
      ? `${named} (after ${delayText(t.delay)})`
      : `after ${delayText(t.delay)}`;
  }
  if (type.startsWith('xstate.done.state.')) return 'done';
  if (type.startsWith('xstate.done.actor.'))
    return `done: ${type.slice('xstate.done.actor.'.length)}`;
  if (type.startsWith('xstate.error.actor.'))
    return `error: ${type.slice('xstate.error.actor.'.length)}`;
  if (type.startsWith('xstate.snapshot.'))
    return `snapshot: ${type.slice('xstate.snapshot.'.length)}`;
  return type;
}

/**
 * `<` and `>` as Mermaid's entity codes: Mermaid draws labels as HTML, so a name
 * holding `<a href=…>` (a machine sent to the inspector) would be a live link.
 */
function escapeMarkup(text: string): string {
  return text.replace(/</g, '#lt;').replace(/>/g, '#gt;');
}

/** Mermaid reads `;` as a statement end and `#name;` as an entity; labels stay on one line. */
function cleanLabel(text: string): string {
  return escapeMarkup(text.replace(/[\r\n]+/g, ' ').replace(/;/g, ','));
}

function quote(text: string): string {
  return `"${escapeMarkup(text.replace(/"/g, "'").replace(/[\r\n]+/g, ' '))}"`;
}

interface Edge {
  /** Deepest state containing both ends (null: the top level of the diagram). */
  scope: AnyStateNode | null;
  from: AnyStateNode;
  to: AnyStateNode;
  label: string;
}

function ancestors(node: AnyStateNode): AnyStateNode[] {
  const out: AnyStateNode[] = [];
  for (let n = node.parent; n; n = n.parent) out.push(n);
  return out;
}

/** How a lifted edge's label names the state it goes to (a history state by its mark). */
function endName(node: AnyStateNode): string {
  if (node.type !== 'history') return node.key;
  return node.history === 'deep' ? 'H*' : 'H';
}

/** `node`, or its ancestor that is a child of `scope` (where an edge in `scope` can be drawn). */
function liftTo(node: AnyStateNode, scope: AnyStateNode): AnyStateNode {
  let n = node;
  while (n.parent !== undefined && n.parent !== scope) n = n.parent;
  return n.parent === scope ? n : node;
}

/** The deepest proper ancestor shared by both nodes, or null when one of them is the root. */
function commonScope(a: AnyStateNode, b: AnyStateNode): AnyStateNode | null {
  const ofB = new Set(ancestors(b));
  for (const n of ancestors(a)) if (ofB.has(n)) return n;
  return null;
}

/**
 * A Mermaid `stateDiagram-v2` of a machine: nested (compound) states as
 * composite states, parallel regions separated by `--`, history states as `H`
 * / `H*` pseudo-states, final states ending in `[*]`, and every transition
 * labelled with its event, its guard in brackets (`[else]` for the fallback of a
 * guarded choice) and delays as `after <delay>`. Targetless transitions are drawn
 * as self-loops. The machine is wrapped in a composite state of its own id when
 * it is parallel at the root or has root-level transitions. Takes a machine or its chart.
 *
 * @example
 * import { toMermaid } from 'agentcharts';
 * console.log(toMermaid(taskLifecycle.machine));
 */
export function toMermaid(
  machineOrChart: AnyStateMachine | ChartDefinition,
  options: MermaidOptions = {},
): string {
  requireArg(
    'toMermaid',
    'machine',
    isMachine(machineOrChart) || isChartDefinition(machineOrChart),
    EXPECTED.machineOrChart,
  );
  requireOptions('toMermaid', options);
  const machine = isChartDefinition(machineOrChart) ? machineOrChart.machine : machineOrChart;
  const root = machine.root;
  const prefix = options.idPrefix ?? '';
  const rootId = `${prefix}${machine.id.replace(/[^A-Za-z0-9_]/g, '_').replace(/^([^A-Za-z])/, 's_$1')}_machine`;
  const ids = assignIds(machine, rootId, prefix);
  const nodes = descendants(root);

  const edges: Edge[] = [];
  let targetsRoot = false;
  for (const source of [root, ...nodes]) {
    const groups: Array<{ list: readonly AnyTransitionDefinition[]; always: boolean }> = [
      ...[...source.transitions.values()].map((list) => ({ list, always: false })),
      ...(source.always && source.always.length > 0 ? [{ list: source.always, always: true }] : []),
    ];
    for (const { list, always } of groups) {
      const guarded = list.some((t) => t.guard !== undefined);
      for (const t of list) {
        const guard =
          t.guard !== undefined
            ? ` [${guardText(t.guard)}]`
            : guarded && list.length > 1
              ? ' [else]'
              : '';
        const label = cleanLabel(`${eventText(t, always, options.timerEvents !== false)}${guard}`);
        const targets = t.target && t.target.length > 0 ? t.target : [source];
        for (const target of targets) {
          if (target === root) targetsRoot = true;
          const scope = target === source ? (source.parent ?? null) : commonScope(source, target);
          // Mermaid draws an edge only between states of one composite: a state named
          // from outside its own becomes a second box outside it. So an end nested
          // deeper than the edge's scope is drawn at its ancestor there, and the
          // label names the state it stands for.
          const from = scope === null ? source : liftTo(source, scope);
          const to = scope === null ? target : liftTo(target, scope);
          const via =
            (from === source ? '' : ` · from ${source.key}`) +
            (to === target ? '' : ` · to ${endName(target)}`);
          edges.push({ scope, from, to, label: via === '' ? label : cleanLabel(`${label}${via}`) });
        }
      }
    }
  }
  const wrap = root.type === 'parallel' || targetsRoot || edges.some((e) => e.from === root);
  const idOf = (n: AnyStateNode): string => (n === root ? rootId : (ids.get(n) ?? rootId));
  const edgeLine = (e: Edge): string => `${idOf(e.from)} --> ${idOf(e.to)} : ${e.label}`;

  const out: string[] = ['stateDiagram-v2'];
  if (options.direction) out.push(`  direction ${options.direction}`);

  const declare = (n: AnyStateNode, indent: string): void => {
    const id = idOf(n);
    if (n.type === 'history') {
      out.push(`${indent}state ${quote(n.history === 'deep' ? 'H*' : 'H')} as ${id}`);
      return;
    }
    const head = id === n.key ? `state ${id}` : `state ${quote(n.key)} as ${id}`;
    if (n.type === 'compound' || n.type === 'parallel') {
      out.push(`${head} {`.replace(/^/, indent));
      body(n, `${indent}  `);
      out.push(`${indent}}`);
    } else {
      out.push(id === n.key ? `${indent}${id}` : `${indent}${head}`);
    }
  };

  const body = (n: AnyStateNode, indent: string): void => {
    const kids = children(n);
    if (n.type === 'parallel') {
      // Regions are separated by `--`; a history state of the parallel state is
      // not a region, so it goes after them (in the last region's section).
      kids
        .filter((k) => k.type !== 'history')
        .forEach((region, i) => {
          if (i > 0) out.push(`${indent}--`);
          declare(region, indent);
        });
      for (const kid of kids) if (kid.type === 'history') declare(kid, indent);
    } else {
      for (const kid of kids) declare(kid, indent);
      const initial = n.type === 'compound' ? n.initial.target[0] : undefined;
      if (initial) out.push(`${indent}[*] --> ${idOf(initial)}`);
      for (const kid of kids) if (kid.type === 'final') out.push(`${indent}${idOf(kid)} --> [*]`);
      for (const kid of kids) {
        if (kid.type !== 'history') continue;
        const config = kid.config as { target?: unknown };
        if (config.target === undefined) continue;
        // The configured default of a history state: where it goes when there is no history yet.
        const targetKeys = (
          Array.isArray(config.target) ? config.target : [config.target]
        ) as unknown[];
        for (const key of targetKeys) {
          const target = typeof key === 'string' ? n.states[key.replace(/^\./, '')] : undefined;
          if (target) out.push(`${indent}${idOf(kid)} --> ${idOf(target)}`);
        }
      }
    }
    for (const e of edges) if (e.scope === n) out.push(`${indent}${edgeLine(e)}`);
  };

  if (wrap) {
    out.push(`  [*] --> ${rootId}`);
    out.push(`  state ${quote(machine.id)} as ${rootId} {`);
    body(root, '    ');
    out.push('  }');
    for (const e of edges) if (e.scope === null) out.push(`  ${edgeLine(e)}`);
  } else {
    body(root, '  ');
  }
  if (options.children !== false) {
    // Each child machine beside the chart, in a composite state of its own (ids
    // prefixed, so a state name shared with the parent stays two states).
    for (const [i, child] of childMachines(machine).entries()) {
      const childPrefix = `c${i + 1}_`;
      const inner = toMermaid(child, {
        children: false,
        idPrefix: childPrefix,
        timerEvents: options.timerEvents !== false,
      })
        .trimEnd()
        .split('\n')
        .slice(1);
      out.push(`  state ${quote(`${child.id} (child actor)`)} as ${childPrefix}child {`);
      for (const line of inner) out.push(`  ${line}`);
      out.push('  }');
    }
  }
  return `${out.join('\n')}\n`;
}

export const DIAGRAM_START = '<!-- diagram:start -->';
export const DIAGRAM_END = '<!-- diagram:end -->';

/** A Markdown ```` ```mermaid ```` fence around a diagram. */
export function mermaidFence(diagram: string): string {
  requireArg('mermaidFence', 'diagram', typeof diagram === 'string', EXPECTED.string);
  return `\`\`\`mermaid\n${diagram.endsWith('\n') ? diagram : `${diagram}\n`}\`\`\``;
}

/** A Markdown file has no (or a broken) `<!-- diagram:start -->` … `<!-- diagram:end -->` pair. */
export class DiagramMarkersError extends AgentchartsError {
  override name = 'DiagramMarkersError';
  readonly file: string;
  constructor(file: string) {
    super(
      'DIAGRAM_MARKERS',
      `${file} has no "${DIAGRAM_START}" line followed by a "${DIAGRAM_END}" line`,
    );
    this.file = file;
  }
}

function markerRange(markdown: string, file: string): { start: number; end: number } {
  const start = markdown.indexOf(DIAGRAM_START);
  const end = start < 0 ? -1 : markdown.indexOf(DIAGRAM_END, start + DIAGRAM_START.length);
  if (start < 0 || end < 0) throw new DiagramMarkersError(file);
  return { start: start + DIAGRAM_START.length, end };
}

/** The text between the diagram markers (the generated block), without surrounding newlines. */
export function readDiagramBlock(markdown: string, file = 'the document'): string {
  const { start, end } = markerRange(markdown, file);
  return markdown.slice(start, end).replace(/^\n+|\n+$/g, '');
}

/** Replaces what is between the diagram markers with a Mermaid fence of `diagram`. */
export function writeDiagramBlock(
  markdown: string,
  diagram: string,
  file = 'the document',
): string {
  const { start, end } = markerRange(markdown, file);
  return `${markdown.slice(0, start)}\n${mermaidFence(diagram)}\n${markdown.slice(end)}`;
}
