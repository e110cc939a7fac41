/**
 * Read by every `agentcharts` command run in this folder (verify, recover,
 * status, history, diagram, paths, serve, …): your charts join the built-in
 * six, and `store` is the one they open unless `--db` or `--store` names another.
 */
import { defineConfig } from 'agentcharts';
import { chart } from './doc-review.ts';

export default defineConfig({ charts: [chart], store: 'sqlite:./reviews.db' });
