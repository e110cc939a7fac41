/**
 * Loading a user's module (a chart, a config) into this process, so that it
 * shares our module instances: the `agentcharts` it imports is the one the CLI and
 * the server run, with one chart-metadata registry and one set of error classes.
 *
 * JavaScript is imported as it is. TypeScript (`.ts`, `.mts`, `.cts`) is imported
 * natively where Node strips types (≥ 22.18, or 22.6+ with the flag); elsewhere
 * tsx's ESM hooks are registered for the whole process first (`register()`, not
 * `tsImport`: a namespaced import gives the module and everything it imports —
 * `agentcharts` included — copies of their own).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AgentchartsError } from '../core/errors.ts';
import { oneLine } from './format.ts';

/** The module could not be found or failed while loading. */
export class ModuleLoadError extends AgentchartsError {
  override name = 'ModuleLoadError';
  readonly file: string;
  constructor(file: string, detail: string, options?: { cause?: unknown }) {
    super('MODULE_LOAD', `Cannot load module "${file}": ${detail}`, options);
    this.file = file;
  }
}

const TYPESCRIPT = /\.[cm]?tsx?$/;

/** Whether this Node strips TypeScript types itself. */
function nodeStripsTypes(): boolean {
  return typeof (process.features as { typescript?: unknown }).typescript === 'string';
}

type Register = () => unknown;
let tsxRegistered = false;

/** tsx's `register`, from beside agentcharts or else from the user's project. */
async function tsxRegister(cwd: string): Promise<Register | undefined> {
  try {
    return (await import('tsx/esm/api')).register;
  } catch {
    try {
      const path = createRequire(join(cwd, 'package.json')).resolve('tsx/esm/api');
      return ((await import(pathToFileURL(path).href)) as { register: Register }).register;
    } catch {
      return undefined;
    }
  }
}

/** Registers tsx's hooks for the whole process, once; a typed error when tsx is not installed. */
async function registerTsx(spec: string, cwd: string): Promise<void> {
  if (tsxRegistered) return;
  const register = await tsxRegister(cwd);
  if (!register) {
    throw new ModuleLoadError(
      spec,
      'a TypeScript module needs Node ≥ 22.18 or the tsx package (npm install -D tsx); or give a .js/.mjs module',
    );
  }
  register();
  tsxRegistered = true;
}

function loadFailure(spec: string, error: unknown): ModuleLoadError {
  const detail = error instanceof Error ? oneLine(error.message) || error.name : String(error);
  return new ModuleLoadError(spec, detail, { cause: error });
}

/** Imports a user's module named on the command line; a typed error when it cannot. */
export async function importModule(spec: string, cwd: string): Promise<Record<string, unknown>> {
  const file = resolve(cwd, spec);
  if (!existsSync(file)) throw new ModuleLoadError(spec, 'no such file');
  const url = pathToFileURL(file).href;
  const typescript = TYPESCRIPT.test(file);
  if (typescript && !nodeStripsTypes()) await registerTsx(spec, cwd);
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    // Syntax Node's type stripping does not take (an enum, a namespace): tsx does.
    if (typescript && code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') {
      await registerTsx(spec, cwd);
      try {
        // A failed import stays failed for its URL; the query makes it a new one.
        return (await import(`${url}?tsx`)) as Record<string, unknown>;
      } catch (retried) {
        throw loadFailure(spec, retried);
      }
    }
    throw loadFailure(spec, error);
  }
}
