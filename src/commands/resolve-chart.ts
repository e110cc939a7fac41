import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import { AgentchartsError } from '../core/errors.ts';
import { getEventSchemas, getMachineEventTypes } from '../strict/events.ts';
import { pickVersion } from './chart-version.ts';
import { importModule } from './load-module.ts';
import type { EventCatalog } from '../testing/explore.ts';

/** A machine named on the command line, with what the CLI needs to explore it. */
export interface ResolvedChart {
  /** Catalog name, or the module path and export name. */
  name: string;
  origin: 'catalog' | 'config' | 'module';
  machine: AnyStateMachine;
  /** The chart version (the highest registered, unless one was asked for). */
  version: number;
  eventSamples: EventCatalog;
  /** Event types the source gave no samples for; a bare `{ type }` sample stands in. */
  derivedSamples: string[];
  input: unknown;
  serializeState: ((snapshot: AnyMachineSnapshot) => string) | undefined;
}

/** The name is not in the catalog of our machines. */
export class ChartNotFoundError extends AgentchartsError {
  override name = 'ChartNotFoundError';
  readonly chart: string;
  readonly known: string[];
  constructor(chart: string, known: string[]) {
    super(
      'CHART_NOT_FOUND',
      `Unknown machine "${chart}"; known machines: ${known.join(', ')} (or pass a path to a module that exports a machine)`,
    );
    this.chart = chart;
    this.known = known;
  }
}

/** The module exports no XState machine, or several and none was chosen. */
export class NoMachineError extends AgentchartsError {
  override name = 'NoMachineError';
  readonly file: string;
  constructor(file: string, detail: string) {
    super('NO_MACHINE', `Module "${file}" ${detail}`);
    this.file = file;
  }
}

/** Whether a value is an XState state machine (duck-typed: a user's module may load its own copy of xstate). */
export function isStateMachine(value: unknown): value is AnyStateMachine {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  const root = v.root as Record<string, unknown> | undefined;
  return (
    typeof v.id === 'string' &&
    typeof v.transition === 'function' &&
    typeof v.getInitialSnapshot === 'function' &&
    typeof root === 'object' &&
    root !== null &&
    typeof root.states === 'object'
  );
}

interface ChartLike {
  machine: AnyStateMachine;
  version?: number;
  eventSamples?: EventCatalog;
  defaultInput?: unknown;
  serializeState?: (snapshot: AnyMachineSnapshot) => string;
}

export function isChartLike(value: unknown): value is ChartLike {
  return (
    value !== null &&
    typeof value === 'object' &&
    isStateMachine((value as { machine?: unknown }).machine)
  );
}

/** `./x.ts`, `/abs/x.ts`, `x.ts`, `dir/x` are paths; `task-lifecycle` is a catalog name. */
export function looksLikePath(spec: string): boolean {
  return /[\\/]/.test(spec) || /\.[cm]?[jt]sx?$/.test(spec) || spec.startsWith('.');
}

function camelCase(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function asFunction(value: unknown): ((snapshot: AnyMachineSnapshot) => string) | undefined {
  return typeof value === 'function'
    ? (value as (snapshot: AnyMachineSnapshot) => string)
    : undefined;
}

/** Fills in `{ type }` for event types the machine names but the samples lack. */
function completeSamples(
  machine: AnyStateMachine,
  samples: EventCatalog | undefined,
): { eventSamples: EventCatalog; derivedSamples: string[] } {
  const out: Record<string, readonly EventObject[]> = { ...(samples ?? {}) } as Record<
    string,
    readonly EventObject[]
  >;
  const types = new Set([
    ...getMachineEventTypes(machine).filter((t) => !t.includes('*')),
    ...Object.keys(getEventSchemas(machine) ?? {}),
  ]);
  const derivedSamples: string[] = [];
  for (const type of [...types].sort()) {
    if ((out[type] ?? []).length > 0) continue;
    out[type] = [{ type }];
    derivedSamples.push(type);
  }
  return { eventSamples: out, derivedSamples };
}

/** A chart of the catalog or the config, resolved under `name`. */
function resolvedChart(
  name: string,
  origin: ResolvedChart['origin'],
  chart: ChartLike,
  fallbackSerialize?: unknown,
): ResolvedChart {
  const { eventSamples, derivedSamples } = completeSamples(chart.machine, chart.eventSamples);
  return {
    name,
    origin,
    machine: chart.machine,
    version: chart.version ?? 1,
    eventSamples,
    derivedSamples,
    input: chart.defaultInput,
    serializeState: asFunction(chart.serializeState) ?? asFunction(fallbackSerialize),
  };
}

/** A chart-like's version (a bare machine is version 1). */
const versioned = (chart: ChartLike) => ({ ...chart, version: chart.version ?? 1 });

async function resolveCatalogChart(
  name: string,
  configured: readonly ChartLike[],
  version: number | undefined,
): Promise<ResolvedChart> {
  const mine = pickVersion(configured.filter((c) => c.machine.id === name).map(versioned), version);
  if (mine) return resolvedChart(name, 'config', mine);
  const machines = (await import('../../machines/index.ts')) as unknown as Record<
    string,
    unknown
  > & {
    catalog: Record<string, ChartLike>;
  };
  const chart = Object.hasOwn(machines.catalog, name) ? machines.catalog[name] : undefined;
  if (!chart) {
    const known = [...Object.keys(machines.catalog), ...configured.map((c) => c.machine.id)];
    throw new ChartNotFoundError(name, known.sort());
  }
  pickVersion([versioned(chart)], version);
  // A chart's namespace (`agentLifecycle`) may export the projection that keeps its traversal finite.
  const namespace = machines[camelCase(name)] as Record<string, unknown> | undefined;
  return resolvedChart(name, 'catalog', chart, namespace?.serializeState);
}

async function resolveModuleChart(
  spec: string,
  exportName: string | undefined,
  cwd: string,
  version: number | undefined,
): Promise<ResolvedChart> {
  const mod = await importModule(spec, cwd);
  const isChartOrMachine = (v: unknown): v is AnyStateMachine | ChartLike =>
    isStateMachine(v) || isChartLike(v);
  const machineOf = (v: AnyStateMachine | ChartLike) => (isChartLike(v) ? v.machine : v);

  let picked: { exportName: string; value: AnyStateMachine | ChartLike } | undefined;
  if (exportName !== undefined) {
    const value = Object.hasOwn(mod, exportName) ? mod[exportName] : undefined;
    if (!isChartOrMachine(value)) {
      throw new NoMachineError(spec, `has no export "${exportName}" that is a machine or a chart`);
    }
    picked = { exportName, value };
  } else {
    for (const candidate of ['chart', 'machine', 'default']) {
      const value = mod[candidate];
      if (Object.hasOwn(mod, candidate) && isChartOrMachine(value)) {
        picked = { exportName: candidate, value };
        break;
      }
    }
    if (!picked) {
      const found = Object.entries(mod).filter(
        (entry): entry is [string, AnyStateMachine | ChartLike] => isChartOrMachine(entry[1]),
      );
      const [first] = found;
      if (!first) {
        throw new NoMachineError(
          spec,
          'exports no XState machine (looked for a `chart` or `machine` export, a default export, or any export that is a StateMachine)',
        );
      }
      // Several versions of one chart are one chart; several charts need a choice.
      if (new Set(found.map(([, v]) => machineOf(v).id)).size > 1) {
        throw new NoMachineError(
          spec,
          `exports several machines (${found.map(([k]) => k).join(', ')}); choose one with --export <name>`,
        );
      }
      picked = { exportName: first[0], value: first[1] };
    }
  }

  // The version asked for (or the highest) among the module's charts of that machine id.
  const id = machineOf(picked.value).id;
  const versions = Object.entries(mod)
    .filter((entry): entry is [string, AnyStateMachine | ChartLike] => isChartOrMachine(entry[1]))
    .filter(([, v]) => machineOf(v).id === id)
    .map(([key, v]) => ({ ...versioned(isChartLike(v) ? v : { machine: v }), exportKey: key }));
  const chosen =
    exportName !== undefined && version === undefined
      ? {
          ...versioned(isChartLike(picked.value) ? picked.value : { machine: picked.value }),
          exportKey: exportName,
        }
      : pickVersion(versions, version);
  if (!chosen) throw new NoMachineError(spec, 'exports no chart of that machine');
  const name = chosen.exportKey;
  // Samples, input and projection may also sit beside a bare machine export.
  const samples = chosen.eventSamples ?? (mod.eventSamples as EventCatalog | undefined);
  const { eventSamples, derivedSamples } = completeSamples(chosen.machine, samples);
  return {
    name: `${spec}#${name}`,
    origin: 'module',
    machine: chosen.machine,
    version: chosen.version,
    eventSamples,
    derivedSamples,
    input: chosen.defaultInput ?? mod.defaultInput ?? mod.input,
    serializeState: asFunction(chosen.serializeState) ?? asFunction(mod.serializeState),
  };
}

/**
 * Resolves a CLI argument to a machine: a catalog name (`task-lifecycle`) or a
 * path to a module (`./my-machine.ts`, loaded through the running tsx loader).
 * From a module it takes the `chart` export (a chart definition), else the
 * `machine` export, else the default export, else the only export that is a
 * StateMachine; `exportName` picks one explicitly. Event samples, input and a
 * `serializeState` projection come from the chart or from module exports of
 * those names (`eventSamples`, `defaultInput`/`input`, `serializeState`). Of several
 * versions of one chart it takes the highest, or `version`.
 */
export async function resolveChart(
  spec: string,
  options: {
    exportName?: string | undefined;
    cwd?: string | undefined;
    /** Charts of the config file, found by machine id before the catalog. */
    configured?: readonly ChartLike[] | undefined;
    /** The chart version (default: the highest registered). */
    version?: number | undefined;
  } = {},
): Promise<ResolvedChart> {
  if (looksLikePath(spec)) {
    const cwd = options.cwd ?? process.cwd();
    return resolveModuleChart(spec, options.exportName, cwd, options.version);
  }
  return resolveCatalogChart(spec, options.configured ?? [], options.version);
}
