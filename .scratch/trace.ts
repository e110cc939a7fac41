import { readFileSync } from 'node:fs';
import { createActor } from 'xstate';
import { buildMachine, Gate } from '../test/support/machine-gen.ts';
import { StepClock } from '../test/support/differential.ts';
console.warn = () => {};
const [spec, script] = JSON.parse(readFileSync(process.argv[2]!, 'utf8'));
const gate = new Gate();
const clock = new StepClock(1_000_000);
const orig = clock.setTimeout.bind(clock);
const root = createActor(buildMachine(spec, gate), { clock });
(clock as any).setTimeout = (fn: any, ms: number) => { const id = orig(fn, ms); const ev = Object.values((root.system as any)._snapshot._scheduledEvents).at(-1) as any; console.log('  schedule', id, clock.now() + ms - 1_000_000, ev?.event?.type, ev?.id, ev?.source?.id); return id; };
root.subscribe({ error: () => {} });
root.start();
const settle = async () => { for (let i = 0; i < 4; i++) await new Promise((r) => setImmediate(r)); };
await settle();
for (const step of script) {
  console.log('STEP', JSON.stringify(step));
  if ('settle' in step) { root.send({ type: 'SETTLE' }); await gate.openTo((root.getSnapshot().context as any).epoch, settle); }
  else if ('wait' in step) await clock.advance(step.wait, settle);
  else if ('send' in step && !('kid' in step)) root.send({ type: step.send, k: step.k });
  await settle();
  if ('wait' in step) break;
}
