/**
 * What a stored state label means, for any machine id: the one place observe,
 * the server, the CLI and the dashboard ask. The answer comes from the chart's
 * metadata ({@link chartMeta}) when this process knows the chart; for an actor of
 * a chart it has never seen, only the snapshot status speaks (finished or not).
 */
import {
  CLASS_COLORS,
  isActiveClass,
  isDisruptedClass,
  isFinishedClass,
  knownChartMeta,
  knownChartMetas,
  type StateClass,
} from './meta.ts';
import { EXPECTED, requireArg } from './options.ts';

export { isActiveClass, isDisruptedClass, isFinishedClass, type StateClass };

/** Class of a label of an unknown chart: from the snapshot status alone. */
function fromStatus(status: string): StateClass {
  if (status === 'done') return 'completed';
  if (status === 'error') return 'failed';
  if (status === 'stopped') return 'terminated';
  return 'working';
}

function checkLabel(fn: string, machineId: unknown, label: unknown): void {
  requireArg(
    fn,
    'label',
    typeof machineId === 'string' && typeof label === 'string',
    'a machine id and a state label (strings)',
  );
}

/**
 * The class of `label` in machine `machineId`'s chart; an actor whose snapshot
 * status is not `active` is finished whatever its state is.
 *
 * @example
 * classifyState('agent-lifecycle', 'active.waiting_input'); // 'waiting'
 * classifyState('task-lifecycle', 'failed', 'done');        // 'failed'
 */
export function classifyState(machineId: string, label: string, status = 'active'): StateClass {
  checkLabel('classifyState', machineId, label);
  const meta = knownChartMeta(machineId);
  return meta ? meta.classify(label, status) : fromStatus(status);
}

/** The document's name of a label (`active.executing` → `executing`); the label itself when unknown. */
export function stateName(machineId: string, label: string): string {
  checkLabel('stateName', machineId, label);
  return knownChartMeta(machineId)?.stateName(label) ?? label;
}

/** Badge colour of a label. */
export function stateColor(machineId: string, label: string, status = 'active'): string {
  checkLabel('stateColor', machineId, label);
  const meta = knownChartMeta(machineId);
  if (meta && status === 'active') return meta.color(label);
  return CLASS_COLORS[classifyState(machineId, label, status)];
}

/**
 * Every stored label a filter names: a document name (`executing`), a full path
 * (`active.executing`) or a compound state (`active`, meaning every leaf under it).
 * Unknown charts match the label as given.
 */
export function labelsFor(machineId: string | undefined, nameOrPath: string): string[] {
  requireArg('labelsFor', 'nameOrPath', typeof nameOrPath === 'string', EXPECTED.string);
  const metas =
    machineId === undefined ? knownChartMetas() : [knownChartMeta(machineId)].filter((m) => !!m);
  const labels = new Set([nameOrPath]);
  for (const meta of metas) for (const label of meta.labelsFor(nameOrPath)) labels.add(label);
  return [...labels];
}
