// A job: its spec, its calendars, its next fires (daylight-saving changes
// and the slots a calendar or freeze skips marked), the jobs it runs after
// and that run after it (chains) with its last chained runs, its run ledger
// with every attempt's token, its missed and skipped slots, and the actions
// the signed-in role may take.
import { html, useEffect, useState } from '../../vendor/preact-htm.js';
import { del, get, post } from '../api.js';
import { AttemptTokens, Confirm, Empty, ErrorNote, StateBadge, Token, When } from '../components.js';
import {
  describeSchedule, enumWord, hasNano, kindWord, markOffsets, nanoDate, notRun, outputText, stateWord, unixDate, zoneTime,
} from '../format.js';
import { roles } from '../route.js';
import { AlertTable, Episodes, useAlerts } from './alerts.js';
import { runs as runStore, useRuns } from '../store.js';

const NEXT_COUNT = 10;

const jobPath = (name) => `/v1/jobs/${encodeURIComponent(name)}`;

// requestID makes a trigger idempotent if the browser sends it twice.
function requestID() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return 'ui-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

function useJob(name) {
  const [state, setState] = useState({ job: null, next: null, graph: null, error: null });
  const load = async () => {
    try {
      const [{ job }, { times, slots }, graph] = await Promise.all([
        get(jobPath(name)),
        get(`${jobPath(name)}/next?count=${NEXT_COUNT}`),
        // The chain is extra: a page still shows the job without it.
        get(`/v1/graph?name=${encodeURIComponent(name)}`).catch(() => ({ jobs: [] })),
      ]);
      const skipped = (slots || []).map((s) => s.skipped || '');
      setState({
        job, next: (times || []).map((t, i) => ({ date: new Date(t), skipped: skipped[i] || '' })),
        graph: graph.jobs || [], error: null,
      });
    } catch (e) {
      setState((s) => ({ ...s, error: e }));
    }
  };
  useEffect(() => {
    load();
  }, [name]);
  return [state, load];
}

export function JobPage({ name, me }) {
  const [{ job, next, graph, error }, reload] = useJob(name);
  const store = useRuns();
  useEffect(() => {
    if (store.status === 'live') store.list({ job: name });
  }, [name, store.status]);
  const node = (graph || []).find((n) => n.name === name) || {};
  const children = node.children || [];
  // The runs of the jobs that run after this one: each run's downstream.
  const childKey = children.slice(0, CHILD_LISTS).join('\n');
  useEffect(() => {
    if (store.status === 'live') for (const c of children.slice(0, CHILD_LISTS)) store.list({ job: c });
  }, [childKey, store.status]);
  // Runs a deleted job of this name left are not this job's history.
  const all = store.all();
  const jobRuns = all.filter((r) => r.job === name && !r.job_deleted);
  const downstream = downstreamOf(all, children);

  if (!job) {
    return html`<section><h1>${name}</h1>${error ? html`<${ErrorNote} error=${error} />` : html`<p class="loading">Loading…</p>`}</section>`;
  }
  const spec = job.spec;
  const zone = spec.timezone || 'UTC';
  return html`<section aria-labelledby="job-title">
    <p class="crumbs"><a href="#/jobs">Jobs</a> /</p>
    <h1 id="job-title">${spec.name}
      ${spec.paused && html` <span class="badge warn">paused</span>`}</h1>
    ${spec.paused && html`<p class="note" aria-label="pause note">Paused${spec.pause_note ? ': ' + spec.pause_note : ''}</p>`}
    <${ErrorNote} error=${error} />
    ${roles.write(me.role) && html`<${Actions} job=${job} children=${children} onDone=${reload} />`}

    <div class="columns">
      <div>
        <h2>Schedule</h2>
        ${spec.schedule || spec.schedules?.length
          ? html`${(spec.schedules?.length ? spec.schedules : [spec.schedule]).map((one) => html`<p key=${one}>${describeSchedule(one) || 'cron'} (<code>${one}</code>), in ${zone}</p>`)}
            ${spec.after && html`<p class="muted">Each slot fires only ${afterWords(spec)}; else it is skipped (dependency not met).</p>`}`
          : html`<p>No schedule: it fires ${afterWords(spec)}.</p>`}
        ${spec.jitter && html`<p class="muted">Each slot dispatched up to ${spec.jitter} after it (jitter).</p>`}
        <${Calendars} refs=${spec.calendars} />
        ${spec.schedule && html`<h3>Next ${NEXT_COUNT} fire times</h3>
          <${NextFires} times=${next} zone=${zone} />`}
        ${(spec.after || children.length > 0) && html`<${Chain} graph=${graph} node=${node} job=${job} />`}
        <h2>Status</h2>
        <${JobFacts} job=${job} zone=${zone} />
      </div>
      <div>
        <h2>Spec</h2>
        <pre class="spec" tabindex="0" aria-label="job spec in the job file's JSON form">${JSON.stringify(spec, null, 2)}</pre>
      </div>
    </div>

    <${JobAlerts} spec=${spec} />

    ${spec.after && html`<h2>Last chained runs</h2>
      <${ChainedRuns} runs=${jobRuns.filter((r) => (r.parents || []).length > 0).slice(0, CHAINED_COUNT)} zone=${zone} />`}
    <h2>Run ledger</h2>
    <${Ledger} runs=${jobRuns.filter((r) => !notRun(r))} downstream=${downstream} zone=${zone} />
    <h2>Missed and skipped slots</h2>
    <${Missed} runs=${jobRuns.filter(notRun)} zone=${zone} />
  </section>`;
}

const CHAINED_COUNT = 10;
// The child jobs whose runs a job's page lists, to show each run's
// downstream runs: one request each.
const CHILD_LISTS = 20;

// downstreamOf maps a run id to the runs of the child jobs that name it
// among their parents, oldest first.
function downstreamOf(all, children) {
  const out = new Map();
  if (!children.length) return out;
  const kids = new Set(children);
  for (const r of [...all].reverse()) {
    if (!kids.has(r.job) || r.job_deleted) continue;
    for (const p of r.parents || []) {
      if (!out.has(p.run_id)) out.set(p.run_id, []);
      out.get(p.run_id).push(r);
    }
  }
  return out;
}

// afterWords says when a job with dependencies fires: "after a, b within 1h".
function afterWords(spec) {
  const parts = (spec.after || []).map((d) => (d.on && d.on !== 'success' ? `${d.job} (${d.on})` : d.job));
  let words = `after ${spec.after_mode === 'any' && parts.length > 1 ? 'any of ' : ''}${parts.join(', ')}`;
  if (spec.after_within && spec.after_within !== '0s') words += ` within ${spec.after_within}`;
  return words;
}

// Chain lists the jobs this one runs after and the jobs that run after it,
// with their last outcomes, and the parent runs it waits with.
function Chain({ graph, node, job }) {
  const byName = Object.fromEntries((graph || []).map((n) => [n.name, n]));
  const link = (name) => html`<a href="#/jobs/${encodeURIComponent(name)}">${name}</a>`;
  const last = (name) => {
    const n = byName[name];
    if (!n) return '';
    if (n.missing) return html` <span class="badge warn">missing</span>`;
    return n.last_outcome ? html` <${StateBadge} state=${n.last_outcome} />` : '';
  };
  const pending = (job.status || {}).pending_parents || [];
  return html`<div class="chain" aria-label="chain">
    ${(node.after || []).length > 0 && html`<h3>Runs after</h3>
      <ul class="parents">${node.after.map((e) => html`<li key=${e.job}>${link(e.job)} <span class="muted small">on ${e.on}</span>${last(e.job)}</li>`)}</ul>`}
    ${(node.children || []).length > 0 && html`<h3>Jobs that run after it</h3>
      <ul class="children">${node.children.map((c) => html`<li key=${c}>${link(c)}${last(c)}</li>`)}</ul>`}
    ${pending.length > 0 && html`<p class="muted small">Waiting with ${pending.map((p) => `${p.job} ${p.run_id} #${p.token}`).join(', ')}</p>`}
  </div>`;
}

function ChainedRuns({ runs, zone }) {
  return html`<div class="scroll">
    <table class="chained">
      <thead><tr><th scope="col">Run</th><th scope="col">Outcome</th><th scope="col">Parent runs</th></tr></thead>
      <tbody>
        ${!runs.length && html`<${Empty} cols="3">No chained run yet.<//>`}
        ${runs.map((r) => html`<tr key=${r.id}>
          <td>${r.id}<div class="muted small">${zoneTime(unixDate(r.slot_unix), zone)}, ${kindWord(r.kind)}</div></td>
          <td><${StateBadge} state=${r.state} />${r.reason ? html` <span class="muted small">${r.reason}</span>` : ''}</td>
          <td><${ParentRuns} refs=${r.parents} /></td>
        </tr>`)}
      </tbody>
    </table>
  </div>`;
}

function ParentRuns({ refs }) {
  return html`<ul class="refs small">${(refs || []).map((p) => html`<li key=${p.run_id}>
    <a href="#/jobs/${encodeURIComponent(p.job)}">${p.job}</a> ${p.run_id} <${Token} value=${p.token} /> ${stateWord(p.state)}</li>`)}</ul>`;
}

// Calendars names the calendars the job's slots must be in (only) or out
// of (exclude), each linking to its page.
function Calendars({ refs }) {
  if (!refs || (!refs.exclude?.length && !refs.only?.length)) return null;
  const links = (names) => names.map((n, i) => html`${i ? ', ' : ''}<a href="#/calendars/${encodeURIComponent(n)}">${n}</a>`);
  return html`<p class="calendars">
    ${refs.exclude?.length ? html`Not on ${links(refs.exclude)}. ` : ''}
    ${refs.only?.length ? html`Only on ${links(refs.only)}.` : ''}
  </p>`;
}

// JobAlerts: what the job expects, its open episodes and its last
// notifications.
function JobAlerts({ spec }) {
  const [{ alerts, episodes, error }] = useAlerts(spec.name, false);
  const expect = spec.expect || {};
  const bounds = [['start within', expect.start_within], ['at most', expect.max_duration],
    ['at least', expect.min_duration], ['a success within', expect.success_within]].filter(([, v]) => v);
  return html`<h2>Alerts</h2>
    <p aria-label="expectations">${bounds.length
      ? html`Expects: ${bounds.map(([k, v], i) => html`${i ? ', ' : ''}${k} <code>${v}</code>`)}.`
      : html`<span class="muted">Expects nothing in particular.</span>`}
      ${(spec.notify || []).length > 0 && html` Notifies ${spec.notify.map((n, i) => html`${i ? '; ' : ''}<code>${n.channel}</code> of ${(n.on || []).join(', ')}`)}.`}</p>
    <${ErrorNote} error=${error} />
    <h3>Open episodes</h3>
    <${Episodes} episodes=${episodes} />
    <h3>Last notifications</h3>
    <${AlertTable} alerts=${alerts === null ? null : alerts.slice(0, 10)} />`;
}

function NextFires({ times, zone }) {
  if (!times) return html`<p class="loading">Loading…</p>`;
  if (!times.length) return html`<p class="muted">No fire times ahead.</p>`;
  const skipped = new Map(times.map((t) => [t.date.getTime(), t.skipped]));
  return html`<ol class="fires">${markOffsets(times.map((t) => t.date), zone).map((t) => html`<li key=${t.date.getTime()}>
    <time datetime=${t.date.toISOString()} class=${skipped.get(t.date.getTime()) ? 'skipped' : undefined}>${zoneTime(t.date, zone, true)}</time>
    <span class="muted small">${' '}${t.offset}</span>
    ${t.change && html` <span class="badge warn" title="the zone's UTC offset changes before this fire">DST ${t.change}</span>`}
    ${skipped.get(t.date.getTime()) && html` <span class="badge quiet" title="this slot will be recorded skipped, not fired">skipped: ${skipped.get(t.date.getTime())}</span>`}
  </li>`)}</ol>`;
}

function JobFacts({ job, zone }) {
  const st = job.status || {};
  return html`<dl class="facts">
    <dt>Generation</dt><dd class="num">${job.generation || '0'}</dd>
    <dt>Version</dt><dd class="num">${job.version || '0'}</dd>
    <dt>Cursor</dt><dd>${st.cursor_unix ? zoneTime(unixDate(st.cursor_unix), zone) : '—'}</dd>
    <dt>Latest token</dt><dd><${Token} value=${st.latest_token} /></dd>
    <dt>Succeeded / failed / missed</dt><dd class="num">${st.succeeded || 0} / ${st.failed || 0} / ${st.missed || 0}</dd>
    <dt>Updated</dt><dd>${job.updated_at ? html`<${When} date=${new Date(job.updated_at)} />` : '—'}${job.updated_by ? ` by ${job.updated_by}` : ''}</dd>
    ${job.spec.max_runs && html`<dt>Slots fired</dt><dd class="num">${st.slots_fired || 0} of ${job.spec.max_runs} (max_runs)</dd>`}
    ${job.spec.pause_after_failures && html`<dt>Failed in a row</dt><dd class="num">${st.failures_in_a_row || 0} of ${job.spec.pause_after_failures}</dd>`}
    ${st.pause?.until_unix && html`<dt>Paused until</dt><dd>${zoneTime(unixDate(st.pause.until_unix), zone)}</dd>`}
    ${st.pause?.reason && html`<dt>Paused itself</dt><dd>${st.pause.reason}${st.pause.run_id ? ` (run ${st.pause.run_id})` : ''}</dd>`}
    ${st.backfill && html`<dt>Backfill</dt><dd aria-label="backfill">${backfillText(st.backfill, zone)}</dd>`}
  </dl>`;
}

// backfillText is the job's backfill as job status shows it: its state,
// its range and how far it got.
function backfillText(b, zone) {
  const done = Number(b.fired || 0) + Number(b.skipped || 0) + Number(b.missed || 0);
  const state = enumWord(b.state, 'BACKFILL_STATE_');
  return `${state}: ${done} of ${b.slots || 0} slots (${b.fired || 0} fired, ${b.skipped || 0} skipped, ${b.missed || 0} missed), `
    + `${zoneTime(unixDate(b.from_unix), zone)} to ${zoneTime(unixDate(b.to_unix), zone)}${b.reason ? `, ${b.reason}` : ''}`;
}

function Actions({ job, children, onDone }) {
  const name = job.spec.name;
  const [dialog, setDialog] = useState(null);
  const [message, setMessage] = useState('');
  const [error, setError] = useState(null);
  const act = async (fn) => {
    setError(null);
    try {
      setMessage(await fn());
      await onDone();
    } catch (e) {
      setError(e);
    }
  };
  const resume = () => act(async () => {
    await post(`${jobPath(name)}:resume`);
    return 'Resumed.';
  });
  // A paused job runs only when forced: the operator asks for one run
  // and the job stays paused.
  const paused = !!job.spec.paused;
  const trigger = () => act(async () => {
    const { run } = await post(`${jobPath(name)}:trigger`, { request_id: requestID(), force: paused });
    runStore.put(run, true);
    return `Triggered run ${run.id} with token #${(run.attempts || []).at(-1)?.token ?? '?'}.`;
  });
  return html`<div class="toolbar" role="group" aria-label="job actions">
    ${paused
      ? html`<button type="button" onClick=${resume}>Resume</button>`
      : html`<button type="button" onClick=${() => setDialog('pause')}>Pause…</button>`}
    ${!job.spec.checkin && html`<button type="button" onClick=${trigger}>${paused ? 'Trigger once' : 'Trigger now'}</button>`}
    <button type="button" class="danger" onClick=${() => setDialog('delete')}>Delete…</button>
    <span class="status" role="status">${message}</span>
    <${ErrorNote} error=${error} />
    ${dialog === 'pause' && html`<${Confirm} title="Pause ${name}" action="Pause" onClose=${() => setDialog(null)}
        onConfirm=${async (f) => { await post(`${jobPath(name)}:pause`, { note: f.note }); setMessage('Paused.'); await onDone(); }}>
      <p>Slots while paused are recorded as missed (paused) and not caught up.</p>
      <label for="pause-note">Note</label>
      <input id="pause-note" name="note" maxlength="256" placeholder="why, and until when" autofocus />
    <//>`}
    ${dialog === 'delete' && html`<${Confirm} title="Delete ${name}" action="Delete" danger onClose=${() => setDialog(null)}
        onConfirm=${async (f) => { await del(jobPath(name) + (f.force ? '?force=true' : '')); location.hash = '#/jobs'; }}>
      <p>The job stops firing and its runs leave the ledger. A job created later with this name starts a new generation.</p>
      ${children.length > 0 && html`<p>${children.join(', ')} ${children.length > 1 ? 'run' : 'runs'} after it: their dependency on it then reads as never met.</p>
        <label><input type="checkbox" name="force" value="true" /> Delete it all the same</label>`}
    <//>`}
  </div>`;
}

function Ledger({ runs, downstream, zone }) {
  return html`<div class="scroll tall">
    <table class="ledger cards">
      <thead><tr>
        <th scope="col">Slot</th><th scope="col">Kind</th><th scope="col">Attempts</th>
        <th scope="col">Led by</th><th scope="col">Outcome</th><th scope="col">Reason</th><th scope="col">Output</th>
      </tr></thead>
      <tbody>
        ${!runs.length && html`<${Empty} cols="7">No runs yet.<//>`}
        ${runs.map((r) => html`<${LedgerRow} key=${r.id} run=${r} downstream=${downstream.get(r.id)} zone=${zone} />`)}
      </tbody>
    </table>
  </div>`;
}

function LedgerRow({ run, downstream, zone }) {
  const attempts = run.attempts || [];
  const leaders = [...new Set(attempts.map((a) => a.node_id).filter(Boolean))];
  const last = attempts.at(-1);
  const output = attempts.map((a) => outputText(a.output)).filter(Boolean).at(-1);
  return html`<tr id="run-${run.id}">
    <td>${zoneTime(unixDate(run.slot_unix), zone)}<div class="muted small">${run.id}</div></td>
    <td data-label="Kind">${kindWord(run.kind)}${(run.parents || []).length > 0 && html`<div class="muted small">after ${run.parents.map((p) => p.run_id).join(', ')}</div>`}${(downstream || []).length > 0 && html`<div class="muted small downstream">then ${downstream.map((c) => `${c.id} (${stateWord(c.state)})`).join(', ')}</div>`}</td>
    <td data-label="Attempts"><div><${AttemptTokens} run=${run} />
      ${attempts.length > 1 && html`<ul class="attempts small">${attempts.map((a) => html`<li key=${a.number}>
        ${a.number}: <${Token} value=${a.token} /> ${kindWord(a.kind)}, ${a.node_id}, ${stateWord(a.state)}</li>`)}</ul>`}</div></td>
    <td data-label="Led by"><div>${leaders.join(', ') || (last?.pinged_by ? `checked in by ${last.pinged_by}` : '—')}${last?.term ? html`<div class="muted small">term ${last.term}</div>` : ''}</div></td>
    <td data-label="Outcome"><div><${StateBadge} state=${run.state} />${hasNano(run.finished_at_unix_nano) && html`<div class="muted small">${zoneTime(nanoDate(run.finished_at_unix_nano))}</div>`}</div></td>
    <td data-label="Reason">${run.off_schedule ? 'off schedule: the ping matched no slot' : run.reason || last?.detail || html`<span class="muted">—</span>`}</td>
    <td data-label="Output">${output ? html`<details><summary>output</summary><pre class="output">${output}</pre></details>` : html`<span class="muted">—</span>`}</td>
  </tr>`;
}

function Missed({ runs, zone }) {
  return html`<div class="scroll">
    <table>
      <thead><tr><th scope="col">Slots</th><th scope="col">Count</th><th scope="col">Reason</th></tr></thead>
      <tbody>
        ${!runs.length && html`<${Empty} cols="3">None.<//>`}
        ${runs.map((r) => html`<tr key=${r.id}>
          <td>${zoneTime(unixDate(r.slot_unix), zone)}${r.last_slot_unix && r.last_slot_unix !== r.slot_unix
            ? html` – ${zoneTime(unixDate(r.last_slot_unix), zone)}` : ''}</td>
          <td class="num">${r.missed_count || 1}</td>
          <td>${reasonText(r.reason)}${(r.parents || []).length > 0 ? ` (parents ${r.parents.map((p) => p.run_id).join(', ')})` : ''}</td>
        </tr>`)}
      </tbody>
    </table>
  </div>`;
}

// reasonText says why a slot was not run.
function reasonText(reason) {
  if (reason === 'overlap_skipped') return 'skipped: a run was still open (overlap skip)';
  if (reason === 'no_checkin') return 'no check-in within its grace (expect.start_within)';
  if (reason === 'dependency_not_met') return 'skipped: its dependencies were not met';
  if (reason?.startsWith('calendar:')) return html`skipped by calendar <a href="#/calendars/${encodeURIComponent(reason.slice(9))}">${reason.slice(9)}</a>`;
  if (reason?.startsWith('freeze:')) return `skipped by freeze ${reason.slice(7)}`;
  return reason || '—';
}
