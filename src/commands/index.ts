import type { Command } from 'commander';
import { registerAlerts } from './alerts.ts';
import { registerDemo } from './demo.ts';
import { registerDiagram } from './diagram.ts';
import { registerInspect } from './inspect.ts';
import { registerHistory } from './history.ts';
import { registerPaths } from './paths.ts';
import { registerRecover } from './recover.ts';
import { registerReindex } from './reindex.ts';
import { registerServe } from './serve.ts';
import { registerStatus } from './status.ts';
import { registerTail } from './tail.ts';
import { registerVerify } from './verify.ts';

/** Registers one CLI command on the program. */
export type RegisterCommand = (program: Command) => void;

/** Every command, in the order `--help` lists them. */
export const commands: RegisterCommand[] = [
  registerDemo,
  registerInspect,
  registerServe,
  registerDiagram,
  registerPaths,
  registerRecover,
  registerVerify,
  registerReindex,
  registerStatus,
  registerHistory,
  registerAlerts,
  registerTail,
];
