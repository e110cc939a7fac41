/**
 * Your own chart as a durable actor on SQLite, across a crash.
 *
 *   cd examples/your-own-chart
 *   npx tsx --conditions=agentcharts-source app.ts
 *
 * A first process creates expense `exp-<time>`, submits it and is killed with
 * SIGKILL before doing anything else. This process then opens the store again,
 * runs `recover()`, loads the expense with `openDurableActor` (it is in
 * `review`, exactly as committed), has it approved, and checks the store with
 * `verify()`. The store is the config's (`./expenses.db`), so afterwards every
 * `agentcharts` command run in this folder sees the same charts and data.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  InvalidEventError,
  InvalidTransitionError,
  createDurableActor,
  getRuntime,
  openDurableActor,
  openStore,
  recover,
  verify,
} from 'agentcharts';
import config from './agentcharts.config.ts';
import { chart, events, machine } from './expense.ts';

const storeUrl = config.store ?? 'sqlite:./agentcharts.db';
const charts = [chart];
const say = (text: string) => console.log(`[${process.pid}] ${text}`);

if (process.argv[2] === '--until-killed') {
  // The first process: every send resolves once its transition is committed,
  // so what it did before the kill is on disk; nothing else survives.
  const id = process.argv[3] ?? 'exp-1';
  const store = openStore(storeUrl);
  const expense = await createDurableActor(machine, { id, store, schemas: events, mode: 'create' });
  await expense.send({ type: 'SUBMIT', amount: 42 });
  say(`${id}: ${expense.state}, amount ${expense.getSnapshot().context.amount}; SIGKILL`);
  process.kill(process.pid, 'SIGKILL');
} else {
  const id = `exp-${Date.now()}`;
  // The same loader and conditions as this process (tsx, agentcharts-source).
  const first = fork(fileURLToPath(import.meta.url), ['--until-killed', id], {
    execArgv: process.execArgv,
  });
  const signal = await new Promise((done) => first.on('exit', (_code, sig) => done(sig)));
  say(`the first process is gone (${String(signal)})`);

  // The restart: a new store handle, recovery, then the actor as the store has it.
  const store = openStore(storeUrl);
  const report = await recover(store, { charts });
  say(`recover(): ${report.actors.length} unfinished actor(s) resumed`);
  const expense = await openDurableActor(store, id, { charts });
  say(`${id}: ${expense.state} (version ${expense.version}), reloaded from ${storeUrl}`);

  // The chart still decides: an event the state does not accept, or an ill-formed
  // one, is refused and changes nothing.
  for (const event of [
    { type: 'SUBMIT', amount: 42 },
    { type: 'APPROVE', approver: '' },
  ]) {
    try {
      await expense.send(event);
    } catch (error) {
      if (!(error instanceof InvalidTransitionError || error instanceof InvalidEventError)) {
        throw error;
      }
      say(`refused ${event.type}: ${error.name}`);
    }
  }
  await expense.send({ type: 'APPROVE', approver: 'ana' });
  say(`${id}: ${expense.state}, approved by ${String(expense.getSnapshot().context.decidedBy)}`);

  const checked = await verify(store, { charts });
  say(
    `verify: ${checked.ok ? 'ok' : 'PROBLEMS'} (${checked.actorsChecked} actor(s), ${checked.rowsChecked} rows)`,
  );
  await getRuntime(store).close();
  await store.close();
  if (!checked.ok) process.exitCode = 1;
}
