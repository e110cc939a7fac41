import fc from 'fast-check';
import { writeFileSync } from 'node:fs';
import { openStore } from '../src/index.ts';
import { runBoth } from '../test/support/differential.ts';
import { buildMachine, Gate, machineSpecArb, scriptArb } from '../test/support/machine-gen.ts';
console.warn = () => {};
const seed = Number(process.argv[2] ?? 1);
let n = 0;
const samples = fc.sample(fc.tuple(machineSpecArb, scriptArb), { numRuns: Number(process.argv[3] ?? 200), seed });
for (const [spec, script] of samples) {
  n++;
  writeFileSync('/tmp/hunt-case.json', JSON.stringify([spec, script]));
  const store = openStore('memory:');
  const t = Date.now();
  try {
    await runBoth(() => { const gate = new Gate(); return { machine: buildMachine(spec, gate), gate }; }, script, { open: () => store, reopens: false });
  } catch (e) {
    console.log(n, 'FAIL', String(e).slice(0, 600));
    writeFileSync(`/tmp/hunt-fail-${n}.json`, JSON.stringify([spec, script]));
  }
  const ms = Date.now() - t;
  if (ms > 2000) console.log(n, 'slow', ms);
}
console.log('done', n);
