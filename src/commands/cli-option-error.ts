import { AgentchartsError } from '../core/errors.ts';

/** A command-line option has a value the command cannot use. */
export class CliOptionError extends AgentchartsError {
  override name = 'CliOptionError';
  readonly option: string;
  constructor(option: string, detail: string) {
    super('CLI_OPTION', `Option ${option}: ${detail}`);
    this.option = option;
  }
}
