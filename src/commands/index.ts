import type { Command } from 'commander';

/** Registers one CLI command on the program. */
export type RegisterCommand = (program: Command) => void;

/** Every command, in the order `--help` lists them. */
export const commands: RegisterCommand[] = [];
