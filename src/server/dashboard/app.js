/* global document, window, fetch, EventSource, URLSearchParams, setTimeout, clearTimeout */
// The agentcharts dashboard: an actors table and an actor page, live over SSE.
// Plain DOM, no build step; every value from the API is written with
// textContent, never as HTML (the one exception is Mermaid's sanitised SVG).

const view = document.getElementById('view');
const live = document.querySelector('[data-testid="live"]');

const CATEGORY_COLORS = {
  working: '#eab308',
  paused: '#9ca3af',
  blocked: '#6366f1',
  idle: '#6b7280',
  succeeded: '#22c55e',
  failed: '#ef4444',
  cancelled: '#4b5563',
};

/** Creates an element; `attrs` keys starting with `on` become listeners. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2), value);
    } else if (key === 'style' && typeof value === 'object') {
      Object.assign(node.style, value);
    } else {
      node.setAttribute(key, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof window.Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** WCAG relative luminance of a `#rrggbb` colour. */
function luminance(hex) {
  const channel = (i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** Black or white text, whichever reads better on `background` (WCAG contrast). */
function textOn(background) {
  if (!/^#[0-9a-fA-F]{6}$/.test(background ?? '')) return '#ffffff';
  const l = luminance(background);
  return (l + 0.05) / 0.05 > 1.05 / (l + 0.05) ? '#000000' : '#ffffff';
}

function badge(state, color, testid = 'state-badge') {
  return el(
    'span',
    {
      class: 'badge',
      'data-testid': testid,
      'data-state': state,
      style: { background: color, color: textOn(color) },
    },
    state.replaceAll('_', ' '),
  );
}

function when(ms) {
  return new Date(ms).toLocaleString();
}

async function api(path, init = {}) {
  const response = await fetch(path, { credentials: 'same-origin', ...init });
  const body = await response.json().catch(() => ({}));
  return { ok: response.ok, status: response.status, body };
}

function nav(path) {
  window.history.pushState({}, '', path);
  void route();
}

function link(path, text, attrs = {}) {
  return el(
    'a',
    {
      href: path,
      ...attrs,
      onclick: (event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey) return;
        event.preventDefault();
        nav(path);
      },
    },
    text,
  );
}

// ---- live stream ---------------------------------------------------------------

let source;
let refreshTimer;
let refreshing = false;
let refreshAgain = false;
let refreshView = async () => {};

/** Re-reads the current view at most every 300 ms, however many messages arrive. */
function scheduleRefresh() {
  if (refreshTimer !== undefined) return;
  refreshTimer = setTimeout(async () => {
    refreshTimer = undefined;
    if (refreshing) {
      refreshAgain = true;
      return;
    }
    refreshing = true;
    try {
      await refreshView();
    } finally {
      refreshing = false;
      if (refreshAgain) {
        refreshAgain = false;
        scheduleRefresh();
      }
    }
  }, 300);
}

function openStream(query, path = '/api/stream') {
  source?.close();
  const search = new URLSearchParams(query).toString();
  source = new EventSource(`${path}${search ? `?${search}` : ''}`);
  live.dataset.state = 'connecting';
  live.textContent = 'connecting…';
  source.onopen = () => {
    live.dataset.state = 'open';
    live.textContent = 'live';
  };
  source.onerror = () => {
    live.dataset.state = 'closed';
    live.textContent = 'reconnecting…';
  };
  source.onmessage = () => scheduleRefresh();
  source.addEventListener('resync', () => scheduleRefresh());
  // The inspector's stream names the inspected actors that changed.
  source.addEventListener('change', () => scheduleRefresh());
}

// ---- actors table ----------------------------------------------------------------

const list = {
  machines: undefined,
  cursors: [undefined],
  page: 0,
};

function listFilters() {
  const params = new URLSearchParams(window.location.search);
  return {
    machine: params.get('machine') ?? '',
    state: params.get('state') ?? '',
    status: params.get('status') ?? '',
  };
}

function setFilters(next) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(next)) if (value) params.set(key, value);
  const search = params.toString();
  window.history.replaceState({}, '', `/${search ? `?${search}` : ''}`);
  list.cursors = [undefined];
  list.page = 0;
  openStream(next.machine ? { machine: next.machine } : {});
  void refreshView();
}

function countsPanel(counts, filters) {
  const categories = el(
    'div',
    { class: 'counts', 'data-testid': 'category-counts' },
    Object.entries(counts.categories).map(([category, n]) =>
      el(
        'div',
        {
          class: 'count',
          'data-testid': `count-${category}`,
          style: { borderTop: `4px solid ${CATEGORY_COLORS[category] ?? '#6b7280'}` },
        },
        el('div', { class: 'n' }, n),
        el('div', { class: 'label' }, category),
      ),
    ),
  );
  const states = el(
    'div',
    { class: 'counts', 'data-testid': 'state-counts', style: { marginTop: '0.75rem' } },
    counts.states.map((s) =>
      el(
        'button',
        {
          type: 'button',
          'data-testid': 'state-count',
          'data-state': s.state,
          title: `Show ${s.state} only`,
          onclick: () =>
            setFilters({ ...filters, state: filters.state === s.state ? '' : s.state }),
        },
        badge(s.name ?? s.state, s.color, 'state-count-badge'),
        ` ${s.count}`,
      ),
    ),
  );
  return card(
    {},
    el('h2', {}, `Actors `, el('span', { class: 'muted', 'data-testid': 'total' }, counts.total)),
    categories,
    states,
  );
}

function filtersPanel(filters, counts) {
  const machineSelect = el(
    'select',
    {
      'data-testid': 'filter-machine',
      onchange: (e) => setFilters({ ...filters, machine: e.target.value, state: '' }),
    },
    el('option', { value: '' }, 'all machines'),
    (list.machines ?? []).map((m) =>
      el('option', { value: m.id, selected: m.id === filters.machine }, m.id),
    ),
  );
  const stateSelect = el(
    'select',
    {
      'data-testid': 'filter-state',
      onchange: (e) => setFilters({ ...filters, state: e.target.value }),
    },
    el('option', { value: '' }, 'all states'),
    counts.states.map((s) =>
      el('option', { value: s.state, selected: s.state === filters.state }, s.state),
    ),
    filters.state && !counts.states.some((s) => s.state === filters.state)
      ? el('option', { value: filters.state, selected: true }, filters.state)
      : null,
  );
  const statusSelect = el(
    'select',
    {
      'data-testid': 'filter-status',
      onchange: (e) => setFilters({ ...filters, status: e.target.value }),
    },
    el('option', { value: '' }, 'any status'),
    ['active', 'done', 'error', 'stopped'].map((s) =>
      el('option', { value: s, selected: s === filters.status }, s),
    ),
  );
  return el(
    'section',
    { class: 'card filters' },
    el('label', {}, 'Machine', machineSelect),
    el('label', {}, 'State', stateSelect),
    el('label', {}, 'Status', statusSelect),
  );
}

function actorsTable(actors) {
  if (actors.length === 0) {
    return el('p', { class: 'muted', 'data-testid': 'no-actors' }, 'No actors match.');
  }
  return el(
    'table',
    { 'data-testid': 'actors-table' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ['Actor', 'Machine', 'State', 'Status', 'Version', 'Updated'].map((h) => el('th', {}, h)),
      ),
    ),
    el(
      'tbody',
      {},
      actors.map((a) =>
        el(
          'tr',
          { 'data-testid': 'actor-row', 'data-actor-id': a.id, 'data-state': a.state },
          el(
            'td',
            {},
            link(`/actors/${encodeURIComponent(a.id)}`, a.id),
            // The card of “Agent State Machine” (v1.0): the agent's name and task, where the chart names them.
            a.name || a.task
              ? el(
                  'div',
                  { class: 'muted', 'data-testid': 'actor-labels' },
                  [a.name, a.task && `task ${a.task}`].filter(Boolean).join(' · '),
                )
              : '',
          ),
          el('td', {}, a.machineId),
          el('td', { title: a.state }, badge(a.stateName ?? a.state, a.color)),
          el('td', {}, a.status),
          el('td', {}, a.version),
          el('td', { class: 'muted' }, when(a.updatedAt)),
        ),
      ),
    ),
  );
}

async function renderList() {
  const filters = listFilters();
  if (!list.machines) {
    const machines = await api('/api/machines');
    list.machines = machines.ok ? machines.body.machines : [];
  }
  const query = new URLSearchParams();
  if (filters.machine) query.set('machine', filters.machine);
  if (filters.state) query.set('state', filters.state);
  if (filters.status) query.set('status', filters.status);
  query.set('limit', '50');
  const cursor = list.cursors[list.page];
  if (cursor) query.set('cursor', cursor);
  const [counts, actors] = await Promise.all([
    api(`/api/counts${filters.machine ? `?machine=${encodeURIComponent(filters.machine)}` : ''}`),
    api(`/api/actors?${query}`),
  ]);
  if (!counts.ok || !actors.ok) {
    view.replaceChildren(errorCard(counts.ok ? actors : counts));
    return;
  }
  const next = actors.body.nextCursor;
  const pager = el(
    'div',
    { class: 'pager' },
    el(
      'button',
      {
        type: 'button',
        'data-testid': 'prev-page',
        disabled: list.page === 0,
        onclick: () => {
          list.page = Math.max(0, list.page - 1);
          void refreshView();
        },
      },
      '← Previous',
    ),
    el('span', { class: 'muted' }, `page ${list.page + 1}`),
    el(
      'button',
      {
        type: 'button',
        'data-testid': 'next-page',
        disabled: !next,
        onclick: () => {
          list.cursors[list.page + 1] = next;
          list.page += 1;
          void refreshView();
        },
      },
      'Next →',
    ),
  );
  view.replaceChildren(
    countsPanel(counts.body, filters),
    filtersPanel(filters, counts.body),
    card({}, actorsTable(actors.body.actors), pager),
  );
}

// ---- actor page ----------------------------------------------------------------------

const actorPage = {
  id: undefined,
  diagram: undefined,
  comment: '',
  notice: undefined,
  last: undefined,
};
let mermaidReady;
let renderCount = 0;

/** Whether the server has mermaid's ELK layout (from /api/session). */
let elkAvailable = false;

function loadMermaid() {
  mermaidReady ??= new Promise((resolve, reject) => {
    const script = el('script', { src: '/assets/mermaid.min.js' });
    script.onload = async () => {
      const mermaid = window.mermaid;
      let layout = 'dagre';
      if (elkAvailable) {
        try {
          // ELK lays nested states out so that edge labels do not overlap.
          const elk = await import('/assets/layout-elk/mermaid-layout-elk.esm.min.mjs');
          mermaid.registerLayoutLoaders(elk.default);
          layout = 'elk';
        } catch {
          layout = 'dagre';
        }
      }
      mermaid.initialize({
        startOnLoad: false,
        securityLevel: 'strict',
        theme: 'default',
        layout,
        elk: { mergeEdges: false, nodePlacementStrategy: 'NETWORK_SIMPLEX' },
      });
      document.documentElement.dataset.layout = layout;
      resolve(mermaid);
    };
    script.onerror = () => reject(new Error('mermaid could not be loaded'));
    document.head.append(script);
  });
  return mermaidReady;
}

async function drawDiagram(container, diagram) {
  if (!diagram) {
    container.replaceChildren(el('p', { class: 'muted' }, 'No chart registered for this machine.'));
    return;
  }
  try {
    const mermaid = await loadMermaid();
    renderCount += 1;
    const { svg } = await mermaid.render(`chart-${renderCount}`, diagram.mermaid);
    // Mermaid's output is sanitised SVG (securityLevel strict).
    container.innerHTML = svg;
    container.dataset.active = diagram.active.join(',');
    container.dataset.visited = (diagram.visited ?? []).join(',');
  } catch (error) {
    container.replaceChildren(
      el('p', { class: 'muted' }, `The chart could not be drawn (${error.message}).`),
      el('pre', {}, diagram.mermaid),
    );
  }
}

async function decide(actorId, decision) {
  const { ok, body } = await api('/dashboard/decision', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      actorId,
      decision,
      ...(actorPage.comment ? { comment: actorPage.comment } : {}),
    }),
  });
  if (ok) {
    actorPage.comment = '';
    actorPage.notice = {
      ok: true,
      text: `${decision === 'approved' ? 'Approved' : 'Denied'}: now ${body.state}.`,
    };
  } else {
    const detail = [body.error, body.state && `state ${body.state}`, body.field, body.reason]
      .filter(Boolean)
      .join(', ');
    actorPage.notice = { ok: false, text: `Refused: ${detail}` };
  }
  await refreshView();
}

function signInForm() {
  const keyId = el('input', {
    type: 'text',
    placeholder: 'Approver key id',
    autocomplete: 'username',
    'data-testid': 'sign-in-key',
  });
  const secret = el('input', {
    type: 'password',
    placeholder: 'Secret',
    autocomplete: 'current-password',
    'data-testid': 'sign-in-secret',
  });
  const submit = async (e) => {
    e.preventDefault();
    const { ok, body } = await api('/dashboard/sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ keyId: keyId.value, secret: secret.value }),
    });
    actorPage.notice = ok
      ? { ok: true, text: `Signed in as ${body.approver}.` }
      : { ok: false, text: `Sign-in refused: ${body.error}` };
    await refreshView();
  };
  return el(
    'form',
    { class: 'sign-in', 'data-testid': 'sign-in', onsubmit: (e) => void submit(e) },
    el('p', { class: 'muted' }, 'To decide, sign in as yourself with your approver key.'),
    keyId,
    ' ',
    secret,
    ' ',
    el('button', { type: 'submit', 'data-testid': 'sign-in-submit' }, 'Sign in'),
  );
}

/** A button that decides the approval gate of actor `id` (it disables itself once clicked). */
function decisionButton(id, decision, cls, label) {
  return el(
    'button',
    {
      type: 'button',
      class: cls,
      'data-testid': cls,
      onclick: (e) => {
        e.target.disabled = true;
        void decide(id, decision);
      },
    },
    label,
  );
}

function approvalCard(data) {
  if (!data.awaitingApproval) return null;
  const id = data.actor.id;
  const signedIn = Boolean(data.signedInApprover);
  if (data.approvalsEnabled && !signedIn) {
    return el(
      'section',
      { class: 'card approval', 'data-testid': 'approval' },
      el('h3', {}, 'Waiting for approval'),
      signInForm(),
    );
  }
  const buttons = signedIn
    ? [
        el(
          'p',
          { class: 'muted', 'data-testid': 'signed-in-as' },
          `Signed in as ${data.signedInApprover}`,
        ),
        decisionButton(id, 'approved', 'approve', 'Approve'),
        ' ',
        decisionButton(id, 'denied', 'deny', 'Deny'),
      ]
    : [el('p', { class: 'muted' }, 'Approvals from the dashboard are not enabled on this server.')];
  const comment = el('textarea', {
    rows: 2,
    placeholder: 'Comment (optional)',
    'data-testid': 'approval-comment',
    oninput: (e) => {
      actorPage.comment = e.target.value;
    },
  });
  comment.value = actorPage.comment;
  const approval = data.context?.approval;
  return el(
    'section',
    { class: 'card approval', 'data-testid': 'approval' },
    el('h3', {}, 'Waiting for approval'),
    approval?.reason ? el('p', {}, 'Reason: ', el('strong', {}, approval.reason)) : null,
    approval?.deadline ? el('p', { class: 'muted' }, `Deadline: ${when(approval.deadline)}`) : null,
    signedIn ? comment : null,
    buttons,
  );
}

function timeline(trail, total, selected) {
  return card(
    {},
    el('h3', {}, `Timeline (${total} transition${total === 1 ? '' : 's'})`),
    el(
      'p',
      { class: 'muted' },
      'Choose a step to see the actor as it was then (← and → step through the trail).',
    ),
    el(
      'ol',
      { class: 'timeline', 'data-testid': 'timeline' },
      [...trail].reverse().map((t) =>
        el(
          'li',
          {
            'data-testid': 'timeline-entry',
            'data-event': t.eventType,
            'data-seq': t.seq,
            class: selected === t.seq ? 'selected' : undefined,
          },
          el(
            'button',
            {
              type: 'button',
              class: 'step',
              'data-testid': 'timeline-step',
              'aria-pressed': selected === t.seq ? 'true' : 'false',
              onclick: () => selectStep(t.seq),
            },
            el('div', { class: 'when' }, `#${t.seq} · ${when(t.at)} · ${t.source ?? ''}`),
            el(
              'div',
              {},
              t.from ? [badge(t.from, t.fromColor ?? '#6b7280', 'from-badge'), ' → '] : null,
              badge(t.to, t.color, 'to-badge'),
              ' ',
              el('code', {}, t.eventType),
              t.keyId ? el('span', { class: 'muted' }, ` by key ${t.keyId}`) : null,
            ),
          ),
        ),
      ),
    ),
  );
}

// ---- time travel: one step of the trail, replayed from the log --------------------------

/** The step in the address (`?step=12`), or undefined for the present. */
function selectedStep() {
  const text = new URLSearchParams(window.location.search).get('step');
  return text && /^\d{1,9}$/.test(text) ? Number(text) : undefined;
}

/** Shows step `seq` (undefined: the present); the address keeps it, so it can be shared. */
function selectStep(seq) {
  const params = new URLSearchParams(window.location.search);
  if (seq === undefined) params.delete('step');
  else params.set('step', String(seq));
  const search = params.toString();
  window.history.replaceState({}, '', `${window.location.pathname}${search ? `?${search}` : ''}`);
  void refreshView();
}

const CHECKS = {
  match: [
    'ok',
    'Replayed from the log: the same snapshot the audit row hashed when it was written.',
  ],
  mismatch: [
    'bad',
    'Replayed from the log, but it differs from the snapshot the audit row hashed.',
  ],
  unrecorded: ['', 'Replayed from the log; this row predates snapshot hashes, so it is unchecked.'],
  not_replayed: ['bad', 'This step could not be replayed with the registered chart.'],
};

function diffList(diff) {
  if (diff.length === 0) return el('p', { class: 'muted' }, 'The context did not change.');
  const show = (v) => (v === undefined ? '' : JSON.stringify(v));
  return el(
    'ul',
    { class: 'diff', 'data-testid': 'step-diff' },
    diff.map((d) =>
      el(
        'li',
        { class: d.kind, 'data-path': d.path, 'data-kind': d.kind },
        d.kind === 'added'
          ? `+ ${d.path}: ${show(d.after)}`
          : d.kind === 'removed'
            ? `- ${d.path}: ${show(d.before)}`
            : `~ ${d.path}: ${show(d.before)} → ${show(d.after)}`,
      ),
    ),
  );
}

function timeTravelCard(step) {
  const [tone, text] = CHECKS[step.snapshotCheck] ?? ['', step.snapshotCheck];
  return el(
    'section',
    {
      class: 'card',
      'data-testid': 'time-travel',
      'data-seq': step.seq,
      'data-state': step.to,
      'aria-live': 'polite',
    },
    el(
      'h3',
      {},
      `Step ${step.seq} of ${step.last}: `,
      el('code', {}, step.eventType),
      ' → ',
      badge(step.toName ?? step.to, step.color, 'step-state'),
    ),
    el(
      'div',
      { class: 'pager' },
      el(
        'button',
        {
          type: 'button',
          'data-testid': 'step-prev',
          disabled: step.seq <= 1,
          onclick: () => selectStep(step.seq - 1),
        },
        '← Earlier',
      ),
      el(
        'button',
        {
          type: 'button',
          'data-testid': 'step-next',
          disabled: step.seq >= step.last,
          onclick: () => selectStep(step.seq + 1),
        },
        'Later →',
      ),
      el(
        'button',
        { type: 'button', 'data-testid': 'step-now', onclick: () => selectStep(undefined) },
        'Back to now',
      ),
      el('a', { href: window.location.href, 'data-testid': 'step-link' }, 'Link to this step'),
    ),
    el(
      'p',
      {
        class: `verified ${tone}`,
        'data-testid': 'snapshot-check',
        'data-check': step.snapshotCheck,
      },
      text,
      step.chainIntact ? '' : ' The hash chain is broken up to this step.',
    ),
    el(
      'p',
      { class: 'muted', 'data-testid': 'step-path' },
      'Path: ',
      step.path.map((p) => p.state).join(' → '),
    ),
    el(
      'div',
      { class: 'grid' },
      el(
        'div',
        {},
        el('h4', {}, 'Context then'),
        el('pre', { 'data-testid': 'step-context' }, JSON.stringify(step.context, null, 2)),
      ),
      el('div', {}, el('h4', {}, 'Changes from the step before'), diffList(step.diff)),
    ),
  );
}

/** ← and → step through the trail of the actor on screen. */
window.addEventListener('keydown', (event) => {
  if (!actorPage.id || !actorPage.last || event.altKey || event.ctrlKey || event.metaKey) return;
  const target = event.target;
  if (target instanceof window.HTMLInputElement || target instanceof window.HTMLTextAreaElement)
    return;
  const current = selectedStep();
  if (event.key === 'ArrowLeft') {
    event.preventDefault();
    selectStep(Math.max(1, (current ?? actorPage.last + 1) - 1));
  } else if (event.key === 'ArrowRight' && current !== undefined) {
    event.preventDefault();
    selectStep(current >= actorPage.last ? undefined : current + 1);
  }
});

/**
 * A page's data from `path`; when the server refuses, the page shows why (after
 * the `back` link, if any) and the answer is undefined.
 */
async function pageData(path, back) {
  const result = await api(path);
  if (result.ok) return result.body;
  view.replaceChildren(...(back ? [back] : []), errorCard(result));
  return undefined;
}

/** A card: a section with `attrs` (a test id, a state) beyond its class. */
function card(attrs, ...children) {
  return el('section', { class: 'card', ...attrs }, ...children);
}

function errorCard(result) {
  const text =
    result.status === 404
      ? 'Not found.'
      : `The server refused the request (${result.status} ${result.body.error ?? ''}).`;
  return card({ 'data-testid': 'error' }, el('p', {}, text));
}

/** The actors this one spawned or invokes, each a link to its own page. */
function childrenCard(children) {
  if (children.length === 0) return null;
  return card(
    { 'data-testid': 'children' },
    el('h3', {}, `Child actors (${children.length})`),
    el(
      'ul',
      { class: 'children' },
      ...children.map((c) =>
        el(
          'li',
          { 'data-testid': 'child', 'data-actor': c.id },
          link(`/actors/${encodeURIComponent(c.id)}`, c.id),
          ' ',
          badge(c.stateName ?? c.state, c.color, 'child-state'),
        ),
      ),
    ),
  );
}

// ---- the chart's properties (agentcharts check), proven or refuted --------------------------

/** Machine id → the promise of its check, fetched once per page load. */
const propertyChecks = new Map();

const PROPERTY_STATUS = {
  proven: ['ok', 'proven'],
  refuted: ['bad', 'refuted'],
  unproven: ['warn', 'unproven'],
};

function propertyItem(p) {
  const [cls, word] = PROPERTY_STATUS[p.status] ?? ['warn', p.status];
  const path = p.counterexample
    ? el(
        'p',
        { class: 'muted', 'data-testid': 'counterexample' },
        `Counterexample: ${p.counterexample.labels.join(' → ') || '(initial)'}`,
      )
    : null;
  return el(
    'li',
    { 'data-testid': 'property', 'data-status': p.status },
    el('span', { class: `property-status ${cls}` }, word),
    ' ',
    el('code', {}, p.title),
    p.description ? el('p', { class: 'muted' }, p.description) : null,
    p.status === 'proven' ? null : el('p', {}, p.detail),
    path,
  );
}

/** Fills `card` with the check of `machineId`: every property with its status. */
function fillPropertiesCard(card, check) {
  const all = [check, ...check.children];
  const items = all.flatMap((c) =>
    c.properties.map((p) =>
      propertyItem(c === check ? p : { ...p, title: `${c.chart}: ${p.title}` }),
    ),
  );
  const space = `${check.states} states${check.complete ? '' : ' (stopped at the bound)'}`;
  card.replaceChildren(
    el('h3', {}, `Properties (${items.length})`),
    items.length === 0
      ? el('p', { class: 'muted' }, 'This chart declares no properties.')
      : el('p', { class: 'muted' }, `Checked over every path: ${space}.`),
    el('ul', { class: 'properties' }, ...items),
  );
}

/** A card listing the chart's properties; filled when the server's check answers. */
function propertiesCard(machineId) {
  const card = el('section', { class: 'card', 'data-testid': 'properties' });
  if (!propertyChecks.has(machineId)) {
    propertyChecks.set(machineId, api(`/api/machines/${encodeURIComponent(machineId)}/properties`));
  }
  card.append(el('p', { class: 'muted' }, 'Checking the chart’s properties…'));
  propertyChecks.get(machineId).then((result) => {
    if (result.ok) fillPropertiesCard(card, result.body);
    else card.replaceChildren(el('p', { class: 'muted' }, 'No properties for this machine.'));
  });
  return card;
}

async function renderActor(id) {
  if (actorPage.id !== id) {
    actorPage.id = id;
    actorPage.diagram = undefined;
    actorPage.comment = '';
    actorPage.notice = undefined;
  }
  const data = await pageData(`/api/actors/${encodeURIComponent(id)}`, link('/', '← all actors'));
  if (!data) return;
  const a = data.actor;
  actorPage.last = data.trailTotal;
  const seq = selectedStep();
  let step;
  if (seq !== undefined) {
    const stepResult = await api(`/api/actors/${encodeURIComponent(id)}/steps/${seq}`);
    step = stepResult.ok ? stepResult.body : undefined;
    if (!stepResult.ok) {
      actorPage.notice = { ok: false, text: `Step ${seq}: ${stepResult.body.error ?? 'refused'}` };
    }
  }
  const diagram = step ? step.diagram : data.diagram;
  let diagramBox = view.querySelector('[data-testid="diagram"]');
  const keepDiagram = diagramBox && actorPage.diagram === diagram?.mermaid;
  if (!keepDiagram) diagramBox = el('div', { class: 'diagram', 'data-testid': 'diagram' });
  const header = card(
    { 'data-testid': 'actor-header', 'data-state': a.state },
    el('p', {}, link('/', '← all actors')),
    el(
      'h2',
      {},
      a.name ? `${a.name} (${a.id})` : a.id,
      ' ',
      badge(a.stateName ?? a.state, a.color),
    ),
    el(
      'p',
      { class: 'muted' },
      [
        a.task && `task ${a.task}`,
        a.machineId,
        a.stateName && a.stateName !== a.state ? `state ${a.state}` : '',
        `status ${a.status}`,
        `version ${a.version}`,
        `updated ${when(a.updatedAt)}`,
      ]
        .filter(Boolean)
        .join(' · '),
    ),
    data.accepts.length
      ? el('p', { class: 'muted' }, `Accepts: ${data.accepts.join(', ')}`)
      : el('p', { class: 'muted' }, 'Accepts no events.'),
    actorPage.notice
      ? el(
          'div',
          {
            class: `notice ${actorPage.notice.ok ? 'ok' : 'error'}`,
            'data-testid': 'decision-result',
          },
          actorPage.notice.text,
        )
      : null,
  );
  view.replaceChildren(
    header,
    approvalCard(data) ?? '',
    childrenCard(data.children ?? []) ?? '',
    step ? timeTravelCard(step) : '',
    card({}, el('h3', {}, step ? `Chart at step ${step.seq}` : 'Chart'), diagramBox),
    propertiesCard(a.machineId),
    el(
      'div',
      { class: 'grid' },
      timeline(data.trail, data.trailTotal, step?.seq),
      card(
        {},
        el('h3', {}, 'Context'),
        el('pre', { 'data-testid': 'context' }, JSON.stringify(data.context, null, 2)),
      ),
    ),
  );
  if (!keepDiagram) {
    actorPage.diagram = diagram?.mermaid;
    await drawDiagram(diagramBox, diagram);
  }
}

// ---- inspector: actors of plain XState apps, sent over the inspection socket ---------------

const inspectorPage = { id: undefined, diagram: undefined };

/** A state value as text: `paying`, or the leaf paths of a nested value. */
function stateText(value) {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  const leaves = [];
  const walk = (v, path) => {
    if (typeof v === 'string') leaves.push([...path, v].join('.'));
    else if (v && typeof v === 'object') {
      const keys = Object.keys(v);
      if (keys.length === 0) leaves.push(path.join('.'));
      for (const key of keys) walk(v[key], [...path, key]);
    }
  };
  walk(value, []);
  return leaves.join(', ');
}

function inspectedLink(actor, text) {
  return link(`/inspector/${encodeURIComponent(actor.id)}`, text ?? actor.name);
}

/** Parents before their children, children indented. */
function inspectedTree(actors) {
  const byParent = new Map();
  const ids = new Set(actors.map((a) => a.id));
  for (const a of actors) {
    const key = a.parentId && ids.has(a.parentId) ? a.parentId : null;
    if (!byParent.has(key)) byParent.set(key, []);
    byParent.get(key).push(a);
  }
  const out = [];
  const visit = (parent, depth) => {
    for (const a of byParent.get(parent) ?? []) {
      out.push({ actor: a, depth });
      if (depth < 20) visit(a.id, depth + 1);
    }
  };
  visit(null, 0);
  return out;
}

async function renderInspectorList() {
  const data = await pageData('/api/inspections');
  if (!data) return;
  const { actors, limits, stats } = data;
  const socket = `${window.location.protocol === 'https:' ? 'wss' : 'ws'}://${window.location.host}/inspect`;
  const help = card(
    { 'data-testid': 'inspector-help' },
    el('h2', {}, 'Inspector'),
    el(
      'p',
      {},
      'Any XState app shows up here when it sends its inspection events to this server: ',
      el('code', {}, `createWebSocketInspector({ url: '${socket}' })`),
      ' from @statelyai/inspect, then ',
      el('code', {}, 'createActor(machine, { inspect: inspector.inspect })'),
      '.',
    ),
    el(
      'p',
      { class: 'muted' },
      `Kept in memory: up to ${limits.maxActors} actors, ${limits.maxEntriesPerActor} events and snapshots each; ` +
        `${stats.received} messages received, ${
          stats.refused.too_large + stats.refused.invalid_json + stats.refused.invalid_message
        } refused, ${stats.actorsDropped} actors dropped.`,
    ),
  );
  const rows = inspectedTree(actors);
  const table =
    rows.length === 0
      ? el('p', { class: 'muted', 'data-testid': 'no-inspected' }, 'No inspected actors yet.')
      : el(
          'table',
          { 'data-testid': 'inspected-table' },
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              ['Actor', 'Session', 'State', 'Status', 'Events', 'Updated'].map((h) =>
                el('th', {}, h),
              ),
            ),
          ),
          el(
            'tbody',
            {},
            rows.map(({ actor: a, depth }) =>
              el(
                'tr',
                {
                  'data-testid': 'inspected-row',
                  'data-name': a.name,
                  'data-state': stateText(a.value),
                },
                el(
                  'td',
                  {},
                  el('span', { class: 'tree-indent', style: { width: `${depth * 1.25}rem` } }),
                  depth > 0 ? '↳ ' : '',
                  inspectedLink(a),
                ),
                el('td', { class: 'muted' }, `app ${a.connection} · ${a.sessionId}`),
                el('td', {}, badge(stateText(a.value), '#1d4ed8', 'inspected-state')),
                el('td', {}, a.status ?? ''),
                el('td', {}, a.entries),
                el('td', { class: 'muted' }, when(a.updatedAt)),
              ),
            ),
          ),
        );
  view.replaceChildren(help, card({}, table));
}

function entryLine(entry) {
  const head = el('div', { class: 'when' }, `#${entry.seq} · ${when(entry.at)} · ${entry.kind}`);
  if (entry.kind === 'event') {
    return el(
      'li',
      { 'data-testid': 'inspected-entry', 'data-kind': 'event', 'data-event': entry.eventType },
      head,
      el('div', {}, 'event ', el('code', {}, entry.eventType || '(none)')),
    );
  }
  return el(
    'li',
    { 'data-testid': 'inspected-entry', 'data-kind': 'snapshot', 'data-event': entry.eventType },
    head,
    el(
      'details',
      { class: 'inspected-entry' },
      el(
        'summary',
        {},
        'snapshot ',
        badge(stateText(entry.snapshot?.value), '#1d4ed8', 'entry-state'),
        entry.eventType ? [' after ', el('code', {}, entry.eventType)] : null,
      ),
      el('pre', {}, JSON.stringify(entry.snapshot?.context ?? null, null, 2)),
    ),
  );
}

async function renderInspected(id) {
  if (inspectorPage.id !== id) {
    inspectorPage.id = id;
    inspectorPage.diagram = undefined;
  }
  const data = await pageData(
    `/api/inspections/${encodeURIComponent(id)}`,
    link('/inspector', '← all inspected actors'),
  );
  if (!data) return;
  const a = data.actor;
  let diagramBox = view.querySelector('[data-testid="inspected-diagram"]');
  const mermaidText = data.diagram?.mermaid;
  const keepDiagram = diagramBox && inspectorPage.diagram === mermaidText;
  if (!keepDiagram) {
    diagramBox = el('div', { class: 'diagram', 'data-testid': 'inspected-diagram' });
  }
  const header = card(
    { 'data-testid': 'inspected-header', 'data-state': stateText(a.value) },
    el('p', {}, link('/inspector', '← all inspected actors')),
    el('h2', {}, a.name, ' ', badge(stateText(a.value), '#1d4ed8', 'inspected-state')),
    el(
      'p',
      { class: 'muted' },
      [
        `session ${a.sessionId}`,
        `app ${a.connection}`,
        a.status && `status ${a.status}`,
        `${a.entries} events and snapshots`,
        a.droppedEntries ? `${a.droppedEntries} oldest dropped` : '',
        `updated ${when(a.updatedAt)}`,
      ]
        .filter(Boolean)
        .join(' · '),
    ),
    data.parent
      ? el('p', { 'data-testid': 'inspected-parent' }, 'Parent: ', inspectedLink(data.parent))
      : null,
  );
  const children = data.children.length
    ? card(
        { 'data-testid': 'inspected-children' },
        el('h3', {}, `Child actors (${data.children.length})`),
        el(
          'ul',
          { class: 'children' },
          data.children.map((c) =>
            el(
              'li',
              { 'data-testid': 'inspected-child', 'data-name': c.name },
              inspectedLink(c),
              ' ',
              badge(stateText(c.value), '#1d4ed8', 'child-state'),
            ),
          ),
        ),
      )
    : null;
  const reasons = {
    no_definition: 'This actor sent no machine definition (it is not a state machine).',
    not_json: 'The machine definition it sent is not JSON.',
    not_a_machine_config: 'The definition it sent is not a machine config.',
    rejected_by_xstate: 'XState could not rebuild the machine from the definition it sent.',
  };
  view.replaceChildren(
    header,
    children ?? '',
    card({}, el('h3', {}, 'Chart'), diagramBox),
    el(
      'div',
      { class: 'grid' },
      card(
        {},
        el('h3', {}, 'Timeline'),
        el(
          'ol',
          { class: 'timeline', 'data-testid': 'inspected-timeline' },
          [...data.entries].reverse().map(entryLine),
        ),
      ),
      card(
        {},
        el('h3', {}, 'Context'),
        el(
          'pre',
          { 'data-testid': 'inspected-context' },
          JSON.stringify(data.snapshot?.context ?? null, null, 2),
        ),
      ),
    ),
  );
  if (!keepDiagram) {
    inspectorPage.diagram = mermaidText;
    if (data.diagram) await drawDiagram(diagramBox, data.diagram);
    else
      diagramBox.replaceChildren(
        el('p', { class: 'muted' }, reasons[data.diagramError] ?? 'No chart.'),
      );
  }
}

// ---- routing -------------------------------------------------------------------------------

async function route() {
  const session = await api('/api/session');
  elkAvailable = session.body.elk === true;
  if (!session.body.authenticated) {
    source?.close();
    live.dataset.state = 'closed';
    live.textContent = 'signed out';
    view.replaceChildren(
      card(
        { 'data-testid': 'signed-out' },
        el('h2', {}, 'Not signed in'),
        el(
          'p',
          {},
          'Open the dashboard link `agentcharts serve` printed (it carries ?token=…) to start a session.',
        ),
      ),
    );
    return;
  }
  const inspected = /^\/inspector(?:\/(.+))?$/.exec(window.location.pathname);
  const match = /^\/actors\/(.+)$/.exec(window.location.pathname);
  if (inspected) {
    const id = inspected[1] === undefined ? undefined : decodeURIComponent(inspected[1]);
    refreshView = () => (id === undefined ? renderInspectorList() : renderInspected(id));
    openStream({}, '/api/inspections/stream');
  } else if (match) {
    const id = decodeURIComponent(match[1]);
    refreshView = () => renderActor(id);
    openStream({ actor: id });
  } else {
    refreshView = () => renderList();
    const filters = listFilters();
    openStream(filters.machine ? { machine: filters.machine } : {});
  }
  if (refreshTimer !== undefined) {
    clearTimeout(refreshTimer);
    refreshTimer = undefined;
  }
  await refreshView();
}

window.addEventListener('popstate', () => void route());
void route();
