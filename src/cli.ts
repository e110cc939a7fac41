#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { commandsFor, type RegisterCommand } from './commands/index.ts';
import { oneLine } from './commands/format.ts';
import { AgentchartsError } from './core/errors.ts';

/** Builds the `agentcharts` program; every command lives in its own file under src/commands. */
export function buildProgram(commands: readonly RegisterCommand[]): Command {
  const program = new Command('agentcharts')
    .description('Typed XState statecharts for agent and task lifecycles, run as durable actors.')
    .version('0.1.0')
    // Program options come before the command: `diagram x --version 2` is the chart's version.
    .enablePositionalOptions()
    .showHelpAfterError()
    // agentcharts.config.ts (charts, store) is read once, before the command runs.
    .hook('preAction', async () => {
      const { loadConfig } = await import('./commands/config-file.ts');
      await loadConfig();
    });
  for (const register of commands) register(program);
  return program;
}

async function main(argv: string[]): Promise<void> {
  // `--version` needs no command at all; a command needs only its own module.
  const versionOnly = argv.length === 3 && (argv[2] === '--version' || argv[2] === '-V');
  const program = buildProgram(versionOnly ? [] : await commandsFor(argv));
  program.exitOverride();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode;
      return;
    }
    // Known failures get one clear line and a non-zero exit, never a stack trace.
    const message = oneLine(error instanceof Error ? error.message : String(error));
    const name = error instanceof AgentchartsError ? error.name : 'Error';
    process.stderr.write(`agentcharts: ${name}: ${message}\n`);
    process.exitCode = 1;
  }
}

await main(process.argv);
