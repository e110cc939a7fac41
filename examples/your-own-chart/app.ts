/**
 * Your own chart as a durable actor on SQLite, across a crash in the middle of
 * an invoke.
 *
 *   cd examples/your-own-chart
 *   npx tsx --conditions=agentcharts-source app.ts
 *
 * A first process submits review `doc-<time>`; the word count the review invokes
 * starts (its step is committed with the transition) and the process is killed
 * with SIGKILL inside it. This process then opens the store again and runs
 * `recover()`: the chart says the count may simply run again (`rerun: 'safe'`),
 * so it does, and the review moves on to `reviewing`. It is loaded typed with
 * `openDurableActor(…, { chart })`, approved by both reviewers, and the store is
 * checked with `verify()`. The store is the config's (`./reviews.db`): afterwards
 * every `agentcharts` command run in this folder sees the same charts and data.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  InvalidEventError,
  createDurableActor,
  defineChart,
  durablePromise,
  getRuntime,
  openDurableActor,
  openStore,
  recover,
  stateName,
  verify,
  waitFor,
} from 'agentcharts';
import config from './agentcharts.config.ts';
import { chart, events, machine } from './doc-review.ts';

const storeUrl = config.store ?? 'sqlite:./agentcharts.db';
const say = (text: string) => console.log(`[${process.pid}] ${text}`);

if (process.argv[2] === '--until-killed') {
  const id = process.argv[3] ?? 'doc-1';
  // The same chart, with a word count that dies while it runs.
  const dies = durablePromise<{ words: number }, { title: string }>(() => {
    say(`${id}: counting words; SIGKILL`);
    process.kill(process.pid, 'SIGKILL');
    return new Promise(() => {});
  });
  const crashing = defineChart(machine.provide({ actors: { countWords: dies } }), { events });
  const store = openStore(storeUrl);
  const doc = await createDurableActor(crashing, { id, store, mode: 'create' });
  await doc.send({ type: 'SUBMIT', title: 'Quarterly report', author: 'bo' });
  await new Promise(() => {}); // the count kills this process
} else {
  const id = `doc-${Date.now()}`;
  // The same loader and conditions as this process.
  const first = fork(fileURLToPath(import.meta.url), ['--until-killed', id], {
    execArgv: process.execArgv,
  });
  const signal = await new Promise((done) => first.on('exit', (_code, sig) => done(sig)));
  say(`the first process is gone (${String(signal)})`);

  // The restart: a new store handle, then recovery runs the interrupted count again.
  const store = openStore(storeUrl);
  const report = await recover(store, { charts: [chart] });
  const reruns = report.steps.filter((s) => s.outcome === 'rerun').length;
  say(
    `recover(): ${report.actors.length} unfinished actor(s), ${reruns} interrupted invoke(s) run again`,
  );
  const doc = await openDurableActor(store, id, { chart });
  await waitFor(doc, (snapshot) => snapshot.matches('reviewing'));
  const words = doc.getSnapshot().context.words;
  say(`${id}: ${stateName(machine.id, doc.state)}, ${words} words`);

  // The chart still decides: an ill-formed approval is refused and changes nothing.
  try {
    await doc.send({ type: 'APPROVE', reviewer: '', area: 'legal' });
  } catch (error) {
    if (!(error instanceof InvalidEventError)) throw error;
    say(`refused APPROVE: ${error.name} (${error.reason} at ${error.field ?? '-'})`);
  }
  await doc.send({ type: 'APPROVE', reviewer: 'ana', area: 'legal' });
  say(`${id}: ${stateName(machine.id, doc.state)}`);
  await doc.send({ type: 'APPROVE', reviewer: 'eve', area: 'editorial' });
  const approvedBy = doc.getSnapshot().context.approvedBy.join(' and ');
  say(`${id}: ${stateName(machine.id, doc.state)}, approved by ${approvedBy}`);

  const checked = await verify(store, { charts: [chart] });
  say(
    `verify: ${checked.ok ? 'ok' : 'PROBLEMS'} (${checked.actorsChecked} actor(s), ${checked.rowsChecked} rows)`,
  );
  await getRuntime(store).close();
  await store.close();
  if (!checked.ok) process.exitCode = 1;
}
