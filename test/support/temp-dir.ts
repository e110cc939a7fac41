import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/**
 * A temporary directory for the enclosing `describe`: made before its tests,
 * removed after them. Returns a getter for its path.
 */
export function suiteTempDir(prefix: string): () => string {
  let dir: string | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (dir === undefined) throw new Error('suiteTempDir: read outside a test');
    return dir;
  };
}
