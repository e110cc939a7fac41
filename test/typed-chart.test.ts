/**
 * Typed everywhere, checked by tsc: a chart's machine types the actor
 * `openDurableActor(store, id, { chart })` returns, the actor
 * `createDurableActor(chart, …)` makes, `useRemoteActor<typeof machine>` and the
 * agent tools. The program below compiles; each wrong use beside it (an event
 * type the chart lacks, a payload field it refuses, a context field it does not
 * have) is a compile error at its line.
 */
import { join } from 'node:path';
import ts from 'typescript';
import { beforeAll, describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const dir = join(root, 'test', '__typed__');

const HEADER = `
import { createDurableActor, executeMove, openDurableActor, openStore, toolsFor } from '../../src/index.ts';
import { useRemoteActor } from '../../src/react/index.ts';
import { chart, machine } from '../../examples/your-own-chart/doc-review.ts';
const store = openStore('memory:');
const review = await openDurableActor(store, 'doc-1', { chart });
const created = await createDurableActor(chart, { id: 'doc-2', store });
export { created, review };
`;

const GOOD = `${HEADER}
await review.send({ type: 'APPROVE', reviewer: 'ana', area: 'legal' });
await created.send({ type: 'SUBMIT', title: 'Report', author: 'bo' });
const title: string = review.getSnapshot().context.title;
const approvedBy: string[] = created.getSnapshot().context.approvedBy;
for (const tool of toolsFor(review)) {
  if (tool.name === 'APPROVE') await tool.execute({ reviewer: 'ana', area: 'editorial' });
}
await executeMove(review, 'SUBMIT', { title: 'Report', author: 'bo' });
export function useView(): number | undefined {
  const { context, accepts, value } = useRemoteActor<typeof machine>('doc-1');
  const types: Array<'SUBMIT' | 'APPROVE' | 'REQUEST_CHANGES' | 'WITHDRAW'> = accepts;
  void types;
  void value;
  return context?.words;
}
export { title, approvedBy };
`;

/** Each wrong use, and the compiler's error code for it. */
const BAD: Record<string, { code: string; error: number }> = {
  'an event type the chart lacks (openDurableActor)': {
    code: `await review.send({ type: 'NOPE' });`,
    error: 2322,
  },
  'an event type the chart lacks (createDurableActor)': {
    code: `await created.send({ type: 'PUBLISH' });`,
    error: 2322,
  },
  'a payload value the schema refuses': {
    code: `await review.send({ type: 'APPROVE', reviewer: 'ana', area: 'finance' });`,
    error: 2322,
  },
  'a context field the chart does not have': {
    code: `export const x: unknown = review.getSnapshot().context.pages;`,
    error: 2339,
  },
  "a context field on useRemoteActor's context": {
    code: `export const useX = () => useRemoteActor<typeof machine>('doc-1').context?.pages;`,
    error: 2339,
  },
  'an agent move the chart lacks': {
    code: `await executeMove(review, 'NOPE', {});`,
    error: 2345,
  },
  "an agent move's payload missing a field": {
    code: `await executeMove(review, 'SUBMIT', { title: 'Report' });`,
    error: 2345,
  },
  "a tool's arguments, narrowed by its name": {
    code: `for (const tool of toolsFor(review)) if (tool.name === 'APPROVE') await tool.execute({ reviewer: 'ana', area: 'finance' });`,
    error: 2322,
  },
};

const files = new Map<string, string>([[join(dir, 'good.ts'), GOOD]]);
Object.values(BAD).forEach((bad, i) =>
  files.set(join(dir, `bad-${i}.ts`), `${HEADER}\n${bad.code}\n`),
);
let diagnostics: Map<string, readonly ts.Diagnostic[]>;

beforeAll(() => {
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), (f) => ts.sys.readFile(f));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const disk = ts.createCompilerHost(parsed.options);
  const host: ts.CompilerHost = {
    ...disk,
    fileExists: (f) => files.has(f) || disk.fileExists(f),
    readFile: (f) => files.get(f) ?? disk.readFile(f),
    getSourceFile: (f, language, ...rest) => {
      const text = files.get(f);
      return text !== undefined
        ? ts.createSourceFile(f, text, language, true)
        : disk.getSourceFile(f, language, ...rest);
    },
  };
  const program = ts.createProgram([...files.keys()], parsed.options, host);
  diagnostics = new Map(
    [...files.keys()].map((f) => [f, ts.getPreEmitDiagnostics(program, program.getSourceFile(f))]),
  );
}, 120_000);

const describeAll = (list: readonly ts.Diagnostic[]) =>
  list.map((d) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);

describe("a chart's types reach every API", () => {
  test('the program using the chart as it means compiles with no error', () => {
    expect(describeAll(diagnostics.get(join(dir, 'good.ts')) ?? [])).toEqual([]);
  });

  Object.entries(BAD).forEach(([name, bad], i) => {
    test(`${name} fails to compile`, () => {
      const found = diagnostics.get(join(dir, `bad-${i}.ts`)) ?? [];
      const line = HEADER.split('\n').length + 1;
      const at = found.map((d) => ({
        code: d.code,
        line:
          d.file && d.start !== undefined
            ? d.file.getLineAndCharacterOfPosition(d.start).line + 1
            : 0,
      }));
      expect(at, describeAll(found).join('\n')).toContainEqual({ code: bad.error, line });
      expect(at.every((d) => d.line === line)).toBe(true);
    });
  });
});
