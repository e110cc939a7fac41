/**
 * A fresh app with the packed package installed, as a user gets it: `npm pack`
 * (its `prepack` builds dist/), then `npm install <tarball>` in a new directory.
 * Suites that pack run in parallel processes and share dist/: a lock directory
 * makes their packs take turns.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const lock = join(root, 'test-artifacts', 'pack.lock');

/** Sleeps the thread (the pack lock is taken in a synchronous beforeAll). */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Runs `fn` holding the pack lock; a lock left by a crashed run (over 10 minutes old) is broken. */
function withPackLock<T>(fn: () => T): T {
  mkdirSync(join(root, 'test-artifacts'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 600_000) {
        rmSync(lock, { recursive: true, force: true });
      } else sleep(500);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Packs the package into `dest` and returns the tarball's path; the checkout keeps running its sources. */
export function packTarball(dest: string): string {
  return withPackLock(() => {
    const packed = execFileSync(npm, ['pack', '--pack-destination', dest, '--silent'], {
      cwd: root,
      encoding: 'utf8',
    });
    rmSync(join(root, 'dist'), { recursive: true, force: true });
    return join(dest, packed.trim().split('\n').at(-1) ?? '');
  });
}

/** A temporary directory holding a packed tarball and an empty ESM app beside it. */
export function freshApp(prefix: string): { dir: string; app: string; tarball: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const tarball = packTarball(dir);
  const app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  return { dir, app, tarball };
}

/** `npm install` in the app, offline first. */
export function install(app: string, packages: readonly string[]): void {
  execFileSync(npm, ['install', ...packages, '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: app,
    stdio: 'ignore',
  });
}

/** Bytes under a path. */
export function du(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + du(join(path, name)), 0);
}

/** Installed packages: every `node_modules/<name>` and `node_modules/@scope/<name>`, nested too. */
export function packageCount(modules: string): number {
  if (!existsSync(modules)) return 0;
  let count = 0;
  for (const name of readdirSync(modules)) {
    if (name.startsWith('.')) continue;
    const dirs = name.startsWith('@')
      ? readdirSync(join(modules, name)).map((inner) => join(modules, name, inner))
      : [join(modules, name)];
    for (const pkg of dirs) {
      if (!existsSync(join(pkg, 'package.json'))) continue;
      count += 1 + packageCount(join(pkg, 'node_modules'));
    }
  }
  return count;
}
