import { buildMachine, Gate } from '../test/support/machine-gen.ts';
import { runBoth } from '../test/support/differential.ts';
import { openStore } from '../src/index.ts';
import { pino } from 'pino';
const spec = JSON.parse(process.argv[2]!);
const [machineSpec, script] = spec;
const gate = new Gate();
const store = openStore('memory:');
try {
  await runBoth(buildMachine(machineSpec, gate), gate, script, { open: () => store, reopens: false });
  console.log('same');
} catch (e) { console.log(String(e)); }
console.log(JSON.stringify(await store.listSteps({}), null, 1));
console.log((await store.history('root')).map(r => [r.eventType, r.metadata]));
