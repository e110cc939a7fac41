import DOMPurify from 'dompurify';
import { setup, and, not, stateIn, assign, createMachine } from 'xstate';
import { describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import {
  DiagramMarkersError,
  readDiagramBlock,
  toMermaid,
  writeDiagramBlock,
} from '../src/inspect/mermaid.ts';

// Mermaid sanitises label text with DOMPurify, which has no DOM under node and
// then lacks `sanitize` and `addHook`. Parsing does not depend on sanitising, so
// the text passes through unchanged; the grammar check is still Mermaid's own.
if (!DOMPurify.isSupported) {
  Object.assign(DOMPurify, { sanitize: (text: string) => text, addHook: () => undefined });
}
const { default: mermaid } = await import('mermaid');

async function parseWithMermaid(text: string): Promise<string> {
  const result = await mermaid.parse(text);
  if (!result) throw new Error('mermaid.parse returned false');
  return result.diagramType;
}

// A machine with every construct the diagram draws.
const workshop = setup({
  types: {
    context: {} as { n: number },
    events: {} as
      | { type: 'GO' }
      | { type: 'STOP' }
      | { type: 'PAUSE' }
      | { type: 'RESUME' }
      | { type: 'KILL' }
      | { type: 'TICK' },
  },
  guards: {
    ready: () => true,
    locked: () => false,
    isMode: (_, _params: { mode: string }) => true,
  },
  delays: { retryBackoff: ({ context }) => 100 * 2 ** context.n },
  actions: { count: assign({ n: ({ context }) => context.n + 1 }) },
}).createMachine({
  id: 'workshop',
  context: { n: 0 },
  initial: 'idle',
  on: { KILL: '.killed', TICK: { actions: 'count' } },
  states: {
    idle: {
      on: {
        GO: [
          { guard: and(['ready', not('locked')]), target: 'work' },
          { guard: stateIn('#workshop.idle'), target: 'idle' },
          { guard: { type: 'isMode', params: { mode: 'fast' } }, target: 'work.a.polish' },
          { target: 'killed' },
        ],
      },
    },
    work: {
      type: 'parallel',
      states: {
        a: {
          initial: 'cut',
          states: {
            cut: { after: { retryBackoff: 'polish', 500: 'cut' } },
            polish: { type: 'final' },
          },
        },
        b: {
          initial: 'cut',
          states: { cut: { on: { STOP: 'stopped' } }, stopped: { type: 'final' } },
        },
        resume: { type: 'history', history: 'deep' },
      },
      onDone: 'done',
      on: { PAUSE: 'paused' },
    },
    paused: {
      initial: 'waiting',
      states: {
        waiting: {},
        hist: { type: 'history', target: 'waiting' },
      },
      on: { RESUME: 'work.resume' },
      always: { guard: 'locked', target: 'idle' },
    },
    killed: { type: 'final' },
    done: { type: 'final' },
  },
});

const workshopDiagram = toMermaid(workshop);
const lines = workshopDiagram.split('\n').map((l) => l.trim());

describe('Mermaid diagrams of a machine', () => {
  test('start with stateDiagram-v2 and draw nested states as composite states with their initial state', () => {
    expect(lines[0]).toBe('stateDiagram-v2');
    expect(workshopDiagram).toMatch(
      /state a \{\n\s+state "cut" as work_a_cut\n\s+polish\n\s+\[\*\] --> work_a_cut\n/,
    );
    expect(workshopDiagram).toMatch(/state paused \{\n\s+waiting\n/);
  });

  test('separate parallel regions with -- and keep history states out of the regions', () => {
    const work = workshopDiagram.slice(
      workshopDiagram.indexOf('state work {'),
      workshopDiagram.indexOf('    paused'),
    );
    expect(work.match(/^\s+--$/gm)).toHaveLength(1);
    expect(work.indexOf('state b {')).toBeGreaterThan(work.indexOf('--'));
    expect(work).toMatch(/\}\n\s+state "H\*" as work_resume\n\s+\}/);
  });

  test('draw history states as H and H* pseudo-states that transitions target, with their default', () => {
    expect(lines).toContain('state "H*" as work_resume');
    expect(lines).toContain('state "H" as paused_hist');
    // Drawn at the composite the history state is in (Mermaid draws an edge only
    // between states of one composite), the label naming it.
    expect(lines).toContain('paused --> work : RESUME · to H*');
    expect(lines).toContain('paused_hist --> waiting');
  });

  test('draw an edge whose ends lie in different composites between the states of one composite, naming its real ends (Mermaid drew a nested end as a second box outside its composite)', () => {
    const nested = createMachine({
      id: 'doc',
      initial: 'drafting',
      states: {
        drafting: {
          initial: 'writing',
          states: {
            writing: { on: { CHECK: 'checking' } },
            checking: { on: { OK: '#doc.reviewing' } },
          },
        },
        reviewing: { on: { REQUEST_CHANGES: 'drafting.writing', PUBLISH: 'published' } },
        published: { type: 'final' },
      },
    });
    const drawn = toMermaid(nested)
      .split('\n')
      .map((l) => l.trim());
    expect(drawn).toContain('drafting --> reviewing : OK · from checking');
    expect(drawn).toContain('reviewing --> drafting : REQUEST_CHANGES · to writing');
    expect(drawn).toContain('writing --> checking : CHECK'); // inside drafting, as it was
    expect(drawn).toContain('reviewing --> published : PUBLISH');
    // Every edge's ends are declared in the composite the edge is drawn in.
    expect(
      drawn.filter(
        (l) => l.includes('-->') && /\b(writing|checking)\b/.test(l.split(':')[0] ?? ''),
      ),
    ).toEqual(['[*] --> writing', 'writing --> checking : CHECK']);
  });

  test('end final states in [*] inside their parent state', () => {
    expect(workshopDiagram).toMatch(/state a \{[^}]*\n\s+polish --> \[\*\]\n/);
    expect(lines).toContain('stopped --> [*]');
    expect(lines).toContain('killed --> [*]');
    expect(lines).toContain('done --> [*]');
  });

  test('label guarded transitions with their guard, parameters and higher-order guards included, and the fallback with else', () => {
    expect(lines).toContain('idle --> work : GO [and(ready, not(locked))]');
    expect(lines).toContain('idle --> idle : GO [in(#workshop.idle)]');
    expect(lines).toContain('idle --> work : GO [isMode(fast)] · to polish');
    expect(lines).toContain('idle --> killed : GO [else]');
  });

  test('label delayed transitions with the name or length of their delay', () => {
    expect(lines).toContain('work_a_cut --> polish : after retryBackoff');
    expect(lines).toContain('work_a_cut --> work_a_cut : after 500ms');
  });

  test('label eventless and done transitions and draw root-level ones from a state named after the machine', () => {
    expect(lines).toContain('paused --> idle : always [locked]');
    expect(lines).toContain('work --> done : done');
    expect(lines).toContain('[*] --> workshop_machine');
    expect(lines).toContain('state "workshop" as workshop_machine {');
    expect(lines).toContain('workshop_machine --> killed : KILL');
    expect(lines).toContain('workshop_machine --> workshop_machine : TICK');
  });

  test('do not wrap a machine without root-level transitions', () => {
    const flat = setup({ types: { events: {} as { type: 'GO' } } }).createMachine({
      id: 'flat',
      initial: 'a',
      states: { a: { on: { GO: 'b' } }, b: { type: 'final' } },
    });
    expect(toMermaid(flat)).toBe(
      ['stateDiagram-v2', '  a', '  b', '  [*] --> a', '  b --> [*]', '  a --> b : GO', ''].join(
        '\n',
      ),
    );
    expect(toMermaid(flat, { direction: 'LR' }).split('\n')[1]).toBe('  direction LR');
  });

  test('give states with repeated, reserved or unusual names unique ids and keep their names as labels', () => {
    const odd = setup({ types: { events: {} as { type: 'NEXT' } } }).createMachine({
      id: '9-lives',
      initial: 'state',
      states: {
        state: { on: { NEXT: 'end' } },
        end: { on: { NEXT: 'my-step' } },
        'my-step': { on: { NEXT: 'note' } },
        note: { on: { NEXT: 'class' } },
        class: { on: { NEXT: 'default' } },
        default: { type: 'final' },
      },
    });
    const text = toMermaid(odd);
    expect(text).toContain('state "state" as s_state');
    expect(text).toContain('state "my-step" as my_step');
    expect(text).toContain('state "default" as s_default');
    expect(text).toContain('s_state --> s_end : NEXT');
    const ids = [...text.matchAll(/ as (\w+)$/gm)].map((m) => m[1]);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('the real mermaid parser', () => {
  test('accepts the diagram of a machine with every construct', async () => {
    expect(await parseWithMermaid(workshopDiagram)).toBe('stateDiagram');
  });

  test.each(Object.keys(catalog))('accepts the diagram of %s', async (name) => {
    const chart = catalog[name as keyof typeof catalog];
    expect(await parseWithMermaid(toMermaid(chart.machine))).toBe('stateDiagram');
  });

  test('rejects a diagram with broken syntax', async () => {
    await expect(parseWithMermaid('stateDiagram-v2\n  a --> : GO\n')).rejects.toThrow(
      /Parse error/,
    );
    // A generated diagram with one closing brace removed.
    const broken = workshopDiagram.replace(/\n\s+\}\n/, '\n');
    expect(broken).not.toBe(workshopDiagram);
    await expect(parseWithMermaid(broken)).rejects.toThrow(/Parse error/);
  });
});

describe('diagram blocks in Markdown', () => {
  const readme = '# T\n\nBefore.\n\n<!-- diagram:start -->\n<!-- diagram:end -->\n\nAfter.\n';

  test('are written between the markers as a mermaid fence and read back', () => {
    const written = writeDiagramBlock(readme, workshopDiagram);
    expect(
      written.startsWith('# T\n\nBefore.\n\n<!-- diagram:start -->\n```mermaid\nstateDiagram-v2\n'),
    ).toBe(true);
    expect(written.endsWith('```\n<!-- diagram:end -->\n\nAfter.\n')).toBe(true);
    expect(readDiagramBlock(written)).toBe(`\`\`\`mermaid\n${workshopDiagram}\`\`\``);
    expect(writeDiagramBlock(written, workshopDiagram)).toBe(written);
  });

  test('need both markers', () => {
    expect(() => writeDiagramBlock('# T\n<!-- diagram:start -->\n', 'x', 'README.md')).toThrow(
      DiagramMarkersError,
    );
    expect(() => readDiagramBlock('# T\n', 'README.md')).toThrow(
      /README.md has no "<!-- diagram:start -->"/,
    );
  });
});
