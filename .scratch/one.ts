import { readFileSync } from 'node:fs';
import { openStore } from '../src/index.ts';
import { runBoth } from '../test/support/differential.ts';
import { buildMachine, Gate } from '../test/support/machine-gen.ts';
console.warn = () => {};
const [spec, script] = JSON.parse(readFileSync(process.argv[2]!, 'utf8'));
console.log(JSON.stringify(spec, null, 0));
console.log(JSON.stringify(script));
const store = openStore('memory:');
try { await runBoth(() => { const gate = new Gate(); return { machine: buildMachine(spec, gate), gate }; }, script, { open: () => store, reopens: false }); console.log('same'); }
catch (e) { console.log(String(e)); }
for (const a of await store.listActors({})) {
  console.log('==', a.id, a.status);
  for (const r of await store.history(a.id)) console.log('  ', r.seq, r.fromState, '->', r.toState, r.eventType, r.metadata);
}
