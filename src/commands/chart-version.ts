/**
 * Which version of a chart a command works with: the highest registered, unless
 * `--version <n>` names another. Every command picks the same way, so `diagram`,
 * `paths`, `status` and `serve` agree about what a machine id means.
 */
import { AgentchartsError } from '../core/errors.ts';
import { CliOptionError } from './cli-option-error.ts';

/** The chart version asked for is not among those registered. */
export class ChartVersionError extends AgentchartsError {
  override name = 'ChartVersionError';
  constructor(
    readonly machineId: string,
    readonly version: number,
    readonly registered: readonly number[],
  ) {
    super(
      'CHART_VERSION',
      `Chart "${machineId}" has no version ${version}; registered: ${registered.join(', ')}`,
    );
  }
}

/** The option's flags and help, for `.option(...VERSION_FLAGS)`. */
export const VERSION_FLAGS = [
  '--version <n>',
  'the chart version to use (default: the highest registered)',
] as const;

/** The `--version` value as a positive integer, or undefined when not given. */
export function parseVersionOption(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new CliOptionError('--version', 'expected a positive integer');
  }
  return n;
}

/** The chart of `version` among `charts` (one machine id), or the highest when none is asked for. */
export function pickVersion<T extends { version: number; machine: { id: string } }>(
  charts: readonly T[],
  version: number | undefined,
): T | undefined {
  const sorted = [...charts].sort((a, b) => b.version - a.version);
  if (version === undefined) return sorted[0];
  const found = sorted.find((c) => c.version === version);
  if (!found && sorted[0]) {
    throw new ChartVersionError(
      sorted[0].machine.id,
      version,
      sorted.map((c) => c.version).reverse(),
    );
  }
  return found;
}
