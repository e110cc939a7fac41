import type { Command } from 'commander';

/** Registers one CLI command on the program. */
export type RegisterCommand = (program: Command) => void;

type CommandModule = readonly [name: string, load: () => Promise<RegisterCommand>];

/** Commands that show charts and live actors. */
const seeing: CommandModule[] = [
  ['inspect', async () => (await import('./inspect.ts')).registerInspect],
  ['serve', async () => (await import('./serve.ts')).registerServe],
  ['diagram', async () => (await import('./diagram.ts')).registerDiagram],
  ['paths', async () => (await import('./paths.ts')).registerPaths],
  ['check', async () => (await import('./check.ts')).registerCheck],
];

/** Commands that keep the durable log sound: after a crash, before a deploy, after a repair. */
const keeping: CommandModule[] = [
  ['recover', async () => (await import('./recover.ts')).registerRecover],
  ['verify', async () => (await import('./verify.ts')).registerVerify],
  ['check-deploy', async () => (await import('./check-deploy.ts')).registerCheckDeploy],
  ['reindex', async () => (await import('./reindex.ts')).registerReindex],
];

/** Commands that read what actors did, and the MCP server agents drive actors through. */
const reading: CommandModule[] = [
  ['status', async () => (await import('./status.ts')).registerStatus],
  ['history', async () => (await import('./history.ts')).registerHistory],
  ['alerts', async () => (await import('./alerts.ts')).registerAlerts],
  ['tail', async () => (await import('./tail.ts')).registerTail],
  ['mcp', async () => (await import('./mcp.ts')).registerMcp],
];

/**
 * Every command, in the order `--help` lists them, each loaded only when needed:
 * a command's module (and what it imports: the server, the stores, mermaid) is
 * read only when that command runs or when help lists them all, so
 * `agentcharts --version` and small commands start fast.
 */
export const commandModules: readonly CommandModule[] = [...seeing, ...keeping, ...reading];

/**
 * The commands to register for `argv` (node, script, …args): only the one named,
 * if it is one of ours; every one otherwise (help, an unknown command).
 */
export async function commandsFor(argv: readonly string[]): Promise<RegisterCommand[]> {
  const name = argv.slice(2).find((arg) => !arg.startsWith('-'));
  const wanted = commandModules.filter(([command]) => command === name);
  const chosen = wanted.length > 0 ? wanted : commandModules;
  return Promise.all(chosen.map(([, load]) => load()));
}
