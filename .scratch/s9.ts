import { setup, createActor, assign, spawnChild, sendTo, sendParent } from 'xstate';
import { createDurableActor, openStore, getRuntime, ManualClock } from '../src/index.ts';
const child = setup({}).createMachine({ id: 'kid', initial: 'a', states: { a: { on: { GO: 'b' } }, b: {} } });
const m = setup({ actors: { child } }).createMachine({
  id: 'p9', initial: 'idle',
  entry: spawnChild('child', { id: 'c1', systemId: 'sys1' }),
  states: { idle: { on: { MORE: { actions: spawnChild('child', { id: 'c2', systemId: 'sys2' }) } } } },
});
const plain = createActor(m).start();
plain.send({ type: 'MORE' });
console.log('plain children', Object.keys(plain.getSnapshot().children));
const store = openStore('memory:');
const d = await createDurableActor(m, { id: 'p', store });
await getRuntime(store).drain();
console.log('durable children', Object.keys(d.getSnapshot().children), (await store.listActors({})).map(a => a.id));
try { await d.send({ type: 'MORE' }); } catch (e) { console.log('err', (e as Error).message); }
await getRuntime(store).drain();
console.log('durable children', Object.keys(d.getSnapshot().children), (await store.listActors({})).map(a => a.id));
