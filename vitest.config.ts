import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The package's own entries resolve to its TypeScript sources in this checkout.
  resolve: { conditions: ['agentcharts-source'] },
  ssr: {
    resolve: { conditions: ['agentcharts-source'], externalConditions: ['agentcharts-source'] },
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
