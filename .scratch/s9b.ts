import { setup, spawnChild } from 'xstate';
import { pureInitial, pureTransition } from '../src/durable/pure.ts';
const child = setup({}).createMachine({ id: 'kid', initial: 'a', states: { a: { on: { GO: 'b' } }, b: {} } });
const m = setup({ actors: { child } }).createMachine({
  id: 'p9', initial: 'idle',
  entry: spawnChild('child', { id: 'c1', systemId: 'sys1' }),
  states: { idle: { on: { MORE: { actions: spawnChild('child', { id: 'c2', systemId: 'sys2' }) } } } },
});
const [s, a] = pureInitial(m, undefined);
console.log(s.status, s.error, Object.keys(s.children), a.map((x: any) => x.type));
const [s2, a2] = pureTransition(m, s, { type: 'MORE' });
console.log(s2.status, s2.error, Object.keys(s2.children), a2.map((x: any) => x.type));
