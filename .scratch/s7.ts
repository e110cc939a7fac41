import { setup, assign, raise } from 'xstate';
import { pureTransition, pureInitial } from '../src/durable/pure.ts';
import { planEffects } from '../src/durable/effects.ts';
import { EMPTY_LEDGER } from '../src/durable/ledger.ts';
const ticks = setup({ types: { context: {} as { n: number } } }).createMachine({
  id: 'ticks', context: { n: 0 },
  on: { TRIPLE: { actions: [raise({ type: 'TICK' }, { delay: 100 }), raise({ type: 'TICK' }, { delay: 200 }), raise({ type: 'TICK' }, { delay: 300 })] },
    TICK: { actions: assign({ n: ({ context }) => context.n + 1 }) } },
});
const [s0] = pureInitial(ticks, undefined);
const [s1, a1] = pureTransition(ticks, s0, { type: 'TRIPLE' });
console.log(a1.map((a: any) => [a.type, a.params]));
console.log(JSON.stringify(planEffects({ machine: ticks, actorId: 'k', parentId: undefined, seq: 2, now: 0, previous: s0, next: s1, actions: a1, ledger: EMPTY_LEDGER }).ledger));
import { createDurableActor, getRuntime, openStore, ManualClock } from '../src/index.ts';
const clock = new ManualClock(1_000_000);
const store = openStore('memory:');
getRuntime(store, { clock, logger: (await import('pino')).pino({ level: 'debug' }) });
const d = await createDurableActor(ticks, { id: 'k1', store, clock });
await d.send({ type: 'TRIPLE' });
console.log(await store.timers('k1'));
clock.advance(1000);
await getRuntime(store).drain();
console.log(d.getSnapshot().context, (await d.history()).map(r => [r.eventType, r.metadata]));
