/** Text formatting of the durable CLI commands: aligned columns, local times, event labels; no JSON. */

/** `hh:mm:ss.mmm` in local time. */
export function clockTime(at: number): string {
  const d = new Date(at);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/**
 * A readable event label: `xstate.init` → `create`, a delayed transition
 * `xstate.after.retryBackoff.task-lifecycle.retrying` → `after:retryBackoff`.
 */
export function eventLabel(eventType: string): string {
  if (eventType === 'xstate.init') return 'create';
  const after = /^xstate\.after\.([^.]+)\./.exec(eventType);
  if (after?.[1] !== undefined) return `after:${after[1]}`;
  return eventType;
}

/** Rows as aligned columns (every cell left-aligned except those named in `right`). */
export function table(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  options: { indent?: string; right?: readonly number[] } = {},
): string {
  const indent = options.indent ?? '  ';
  const right = new Set(options.right ?? []);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    indent +
    cells
      .map((c, i) => {
        const w = widths[i] ?? 0;
        if (i === cells.length - 1 && !right.has(i)) return c;
        return right.has(i) ? c.padStart(w) : c.padEnd(w);
      })
      .join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

/** Longest error line the CLI prints (a failure's reason, never a payload dump). */
const MAX_ERROR_LINE = 1_000;

/**
 * An error message on one line: its non-empty lines joined (a transform's
 * `file:line:col: ERROR: …`, XState's reason after "Invalid transition
 * definition …:"), cut at {@link MAX_ERROR_LINE} characters.
 */
export function oneLine(message: string): string {
  const line = message
    .split('\n')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .join(' ');
  return line.length > MAX_ERROR_LINE ? `${line.slice(0, MAX_ERROR_LINE)}…` : line;
}
