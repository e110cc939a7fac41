import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import { generatedFiles, ROOT } from '../scripts/docs.ts';

describe('committed diagrams', () => {
  const files = generatedFiles();

  test('cover the README and the docs page of every chart in the catalog', () => {
    const names = Object.keys(catalog);
    expect(files.map((f) => relative(ROOT, f.file)).sort()).toEqual(
      names.flatMap((n) => [`docs/machines/${n}.md`, `machines/${n}/README.md`]).sort(),
    );
  });

  test.each(files.map((f) => [relative(ROOT, f.file), f] as const))(
    '%s is up to date with its chart (run `npm run docs` if not)',
    (_label, file) => {
      expect(file.current, 'the file exists').not.toBeNull();
      expect(file.current).toBe(file.expected);
    },
  );

  test('a file whose diagram differs from its chart is reported stale, and only that one', () => {
    // A copy of the generated files, with one README's diagram edited by hand.
    const tmp = join(ROOT, 'test-artifacts', 'diagrams-fresh');
    rmSync(tmp, { recursive: true, force: true });
    for (const f of files) {
      const target = join(tmp, relative(ROOT, f.file));
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, f.expected);
    }
    expect(generatedFiles(tmp).filter((f) => f.current !== f.expected)).toEqual([]);

    const name = Object.keys(catalog)[0] ?? '';
    const readme = join(tmp, 'machines', name, 'README.md');
    const fresh = readFileSync(readme, 'utf8');
    writeFileSync(
      readme,
      fresh.replace('stateDiagram-v2\n', 'stateDiagram-v2\n  leftover_state\n'),
    );
    const stale = generatedFiles(tmp).filter((f) => f.current !== f.expected);
    expect(stale.map((f) => relative(tmp, f.file))).toEqual([`machines/${name}/README.md`]);
    expect(stale[0]?.expected).toBe(fresh);
  });
});
