/**
 * Import boundaries (DESIGN.md, Layout): imports point one way,
 *   core ← strict ← store ← durable ← observe/inspect/testing/check/agents ← server ← cli,
 * charts (machines/) import only core and strict, and there is no import circle.
 * `npm run lint` runs this; a violation fails the build.
 */
const layer = (names) => `^src/(${names.join('|')})(/|\\.ts$)`;
/** Bottom to top; a layer may import its own and the ones before it. Peers share a rank. */
const ORDER = [
  ['core'],
  ['strict'],
  ['store'],
  ['durable'],
  // check (property proofs) sits beside testing: it explores as testing does, and the
  // generated tests prove the chart's properties with it.
  ['observe', 'inspect', 'testing', 'check', 'agents'],
  ['server'],
  ['commands', 'cli', 'index'],
];
const above = Object.fromEntries(
  ORDER.slice(0, -1).flatMap((rank, i) => rank.map((name) => [name, ORDER.slice(i + 1).flat()])),
);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle: split the concept the two files share into a lower layer.',
      from: {},
      to: { circular: true },
    },
    ...Object.entries(above).map(([name, higher]) => ({
      name: `layer-${name}`,
      severity: 'error',
      comment: `src/${name} imports only from its own layer and below (DESIGN.md, Layout).`,
      from: { path: layer([name]) },
      // The chart catalog (machines/) sits beside the runtime: only the server and the
      // CLI pick charts out of it.
      to: { path: name === 'server' ? layer(higher) : [layer(higher), '^machines/'] },
    })),
    {
      name: 'chart-entry-is-browser-safe',
      severity: 'error',
      comment:
        'agentcharts/chart (src/chart.ts) bundles for the browser: it reaches src/core and src/strict only, and nothing of Node.',
      from: { path: '^src/chart\\.ts$' },
      to: {
        path: [
          layer([
            'store',
            'durable',
            'observe',
            'inspect',
            'testing',
            'agents',
            'server',
            'commands',
          ]),
          '^node:',
          '^(fs|path|os|crypto|module|child_process|url|util|events|stream|zlib|worker_threads|net|http)$',
          '^node_modules/(better-sqlite3|pino|commander)/',
        ],
        reachable: true,
      },
    },
    {
      name: 'charts-are-pure',
      severity: 'error',
      comment: 'A chart imports only src/core and src/strict (and xstate, zod).',
      from: { path: '^machines/' },
      to: {
        path: layer([
          'store',
          'durable',
          'observe',
          'inspect',
          'testing',
          'check',
          'agents',
          'server',
          'commands',
          'cli',
          'index',
        ]),
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|\\.tmp|test-artifacts|coverage|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs'] },
  },
};
