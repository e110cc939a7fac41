/**
 * One status line on stderr for long CLI work ("counting actors…", "rule 3/6"),
 * redrawn in place, shown only on a terminal so pipes and `--json` output stay clean.
 */

export interface ProgressLine {
  update(text: string): void;
  /** Clears the line. */
  done(): void;
}

/**
 * @example
 * const progress = progressLine();
 * progress.update('evaluating rule 2/6 task_retry_flapping');
 * progress.done();
 */
export function progressLine(
  stream: NodeJS.WriteStream = process.stderr,
  enabled: boolean = stream.isTTY && process.env['CI'] === undefined,
): ProgressLine {
  let shown = false;
  return {
    update(text) {
      if (!enabled) return;
      stream.write(`\r${text}\u001b[K`);
      shown = true;
    },
    done() {
      if (enabled && shown) stream.write('\r\u001b[K');
      shown = false;
    },
  };
}
