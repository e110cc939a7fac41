/**
 * Optional query filters as positional parameters: the store's and the read
 * models' queries bind a value only for the filters they were given.
 */

/** A filter: the column and its operator (`actor_id =`, `at >=`), and its value. */
export type Filter = readonly [test: string, value: unknown];

/**
 * The conditions `<test> $n` of the filters whose value is defined, each value
 * appended to `values` as its parameter `$n`.
 */
export function boundConditions(values: unknown[], filters: readonly Filter[]): string[] {
  const conditions: string[] = [];
  for (const [test, value] of filters) {
    if (value === undefined) continue;
    values.push(value);
    conditions.push(`${test} $${values.length}`);
  }
  return conditions;
}

/** `WHERE a = $1 AND …` over the filters whose value is defined; empty when none is. */
export function whereClause(values: unknown[], filters: readonly Filter[]): string {
  const conditions = boundConditions(values, filters);
  return conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
}
