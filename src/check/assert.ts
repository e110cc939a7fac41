/**
 * A property that is not proven as a typed error: what a generated test throws,
 * and what a program that must not go on with an unproven chart catches.
 */
import { errorClass } from '../core/errors.ts';
import { requireArg } from '../core/options.ts';
import type { ChartCheck, PropertyResult } from './check-chart.ts';
import { formatCheckPath } from './format.ts';

/** The fields of a {@link PropertyRefutedError}. */
export interface PropertyRefutedFields {
  machineId: string;
  property: string;
  detail: string;
  /** The counterexample, one line per event (`paths` form, then each event's payload). */
  counterexample: readonly string[];
}

/** A property does not hold: a path of the chart breaks it. */
export class PropertyRefutedError extends errorClass<PropertyRefutedFields>(
  'PROPERTY_REFUTED',
  (f) =>
    `Property ${f.property} of chart "${f.machineId}" is refuted: ${f.detail}${
      f.counterexample.length ? `\ncounterexample:\n${f.counterexample.join('\n')}` : ''
    }`,
) {
  override name = 'PropertyRefutedError';
}

/** The fields of a {@link PropertyUnprovenError}. */
export interface PropertyUnprovenFields {
  machineId: string;
  property: string;
  /** States explored before the bound stopped the check. */
  states: number;
  /** What the check suggests: the context fields that keep the space growing. */
  hint: string;
}

/**
 * The chart's state space is larger than the bound, and what was explored neither
 * proves nor refutes the property: its projection (`serializeState`) is not finite
 * within the bound.
 */
export class PropertyUnprovenError extends errorClass<PropertyUnprovenFields>(
  'PROPERTY_UNPROVEN',
  (f) =>
    `Property ${f.property} of chart "${f.machineId}" is unproven up to ${f.states} states: ${f.hint}`,
) {
  override name = 'PropertyUnprovenError';
}

/**
 * Throws unless `result` (a property of `check`) is proven:
 * {@link PropertyRefutedError} with its counterexample, or
 * {@link PropertyUnprovenError} naming what keeps the state space growing.
 */
export function assertProven(check: ChartCheck, result: PropertyResult): void {
  requireArg(
    'assertProven',
    'check',
    Array.isArray(check?.properties),
    'a check (what checkChart returns)',
  );
  requireArg(
    'assertProven',
    'result',
    check.properties.includes(result),
    'one of the check’s properties',
  );
  if (result.status === 'proven') return;
  if (result.status === 'refuted') {
    throw new PropertyRefutedError({
      machineId: check.machineId,
      property: result.title,
      detail: result.detail,
      counterexample: result.counterexample ? formatCheckPath(result.counterexample, '  ') : [],
    });
  }
  throw new PropertyUnprovenError({
    machineId: check.machineId,
    property: result.title,
    states: check.states,
    hint:
      check.notes.find((n) => n.startsWith('the state space has more than')) ??
      'the state space is larger than the bound',
  });
}
