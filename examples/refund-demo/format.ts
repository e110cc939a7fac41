/**
 * How the demo prints: local clock times, transition lines and fixed-width
 * columns sized for the refund story's states, events and keys.
 */

const clock = new Intl.DateTimeFormat('en-GB', {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  fractionalSecondDigits: 3,
  hourCycle: 'h23',
});

/** `hh:mm:ss.mmm` in local time. */
export function clockTime(at: number): string {
  return clock.format(at);
}

/** The log's event name, with the creation (`xstate.init`) shown as `create`. */
export function eventName(eventType: string): string {
  return eventType === 'xstate.init' ? 'create' : eventType;
}

/** `from --EVENT--> to`, padded so that successive lines align; an optional note after `to`. */
export function transitionText(
  from: string | null,
  eventType: string,
  to: string,
  note?: string,
): string {
  const arrow = `--${eventName(eventType)}-->`;
  const head = `${(from ?? '(new)').padEnd(9)} ${arrow.padEnd(24)} `;
  return note ? `${head}${to.padEnd(9)} ${note}` : `${head}${to}`;
}

/** Cents as dollars: 15000 → `$150.00`. */
export function dollars(cents: number): string {
  return `$${(cents / 100).toFixed(2)}`;
}

/**
 * One line of fixed-width columns two spaces apart, after `indent`: a positive
 * width pads the cell on the right, a negative one on the left (numbers); the
 * last cell is never padded, and a cell wider than its column pushes the rest on.
 */
export function columns(
  cells: readonly string[],
  widths: readonly number[],
  indent = '  ',
): string {
  return (
    indent +
    cells
      .map((cell, i) => {
        const width = widths[i] ?? 0;
        if (i === cells.length - 1 && width >= 0) return cell;
        return width < 0 ? cell.padStart(-width) : cell.padEnd(width);
      })
      .join('  ')
  );
}
