/**
 * Optional peer dependencies: PostgreSQL (`pg`), the server (`hono`,
 * `@hono/node-server`, `prom-client`), the Stately inspector, the MCP SDK. An
 * app that only wants SQLite does not install them; the code that needs one
 * loads it when it runs and, when it is missing, says which packages to install.
 */
import { createRequire } from 'node:module';
import { AgentchartsError } from './errors.ts';

/** A feature needs optional packages that are not installed. */
export class MissingDependencyError extends AgentchartsError {
  override name = 'MissingDependencyError';
  /** What needed them, e.g. `agentcharts serve` or `a postgres:// store`. */
  readonly feature: string;
  /** The packages to install. */
  readonly packages: readonly string[];
  constructor(feature: string, packages: readonly string[], options?: { cause?: unknown }) {
    super(
      'MISSING_DEPENDENCY',
      `${feature} needs ${packages.join(', ')} (optional peer ${packages.length === 1 ? 'dependency' : 'dependencies'}): npm install ${packages.join(' ')}`,
      options,
    );
    this.feature = feature;
    this.packages = packages;
  }
}

/** Whether `error` is Node's "cannot find package X" for one of `packages`. */
function isMissing(error: unknown, packages: readonly string[]): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  const message = error instanceof Error ? error.message : '';
  return packages.some((name) => message.includes(`'${name}`) || message.includes(`"${name}`));
}

/**
 * Runs `load` (a dynamic `import()` of a module that imports optional packages);
 * when one of `packages` is missing, throws MissingDependencyError naming them all.
 */
export async function importOptional<T>(
  load: () => Promise<T>,
  feature: string,
  packages: readonly string[],
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissing(error, packages))
      throw new MissingDependencyError(feature, packages, { cause: error });
    throw error;
  }
}

const require = createRequire(import.meta.url);

/**
 * Loads a CommonJS optional package synchronously (for `openStore`, which is
 * synchronous); throws MissingDependencyError when it is not installed.
 */
export function requireOptional<T>(name: string, feature: string): T {
  try {
    return require(name) as T;
  } catch (error) {
    if (isMissing(error, [name]))
      throw new MissingDependencyError(feature, [name], { cause: error });
    throw error;
  }
}
