// A job: its spec, its calendars, its next fires (daylight-saving changes
// and the slots a calendar or freeze skips marked), its run ledger with
// every attempt's token, its missed and skipped slots, and the actions the
// signed-in role may take.
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
  const [state, setState] = useState({ job: null, next: null, error: null });
  const load = async () => {
    try {
      const [{ job }, { times, slots }] = await Promise.all([
        get(jobPath(name)),
        get(`${jobPath(name)}/next?count=${NEXT_COUNT}`),
      ]);
      const skipped = (slots || []).map((s) => s.skipped || '');
      setState({ job, next: (times || []).map((t, i) => ({ date: new Date(t), skipped: skipped[i] || '' })), error: null });
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
  const [{ job, next, error }, reload] = useJob(name);
  const store = useRuns();
  useEffect(() => {
    if (store.status === 'live') store.list({ job: name });
  }, [name, store.status]);
  // Runs a deleted job of this name left are not this job's history.
  const jobRuns = store.all().filter((r) => r.job === name && !r.job_deleted);

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
    ${roles.write(me.role) && html`<${Actions} job=${job} onDone=${reload} />`}

    <div class="columns">
      <div>
        <h2>Schedule</h2>
        ${(spec.schedules?.length ? spec.schedules : [spec.schedule]).map((one) => html`<p key=${one}>${describeSchedule(one) || 'cron'} (<code>${one}</code>), in ${zone}</p>`)}
        ${spec.jitter && html`<p class="muted">Each slot dispatched up to ${spec.jitter} after it (jitter).</p>`}
        <${Calendars} refs=${spec.calendars} />
        <h3>Next ${NEXT_COUNT} fire times</h3>
        <${NextFires} times=${next} zone=${zone} />
        <h2>Status</h2>
        <${JobFacts} job=${job} zone=${zone} />
      </div>
      <div>
        <h2>Spec</h2>
        <pre class="spec" tabindex="0" aria-label="job spec in the job file's JSON form">${JSON.stringify(spec, null, 2)}</pre>
      </div>
    </div>

    <${JobAlerts} spec=${spec} />

    <h2>Run ledger</h2>
    <${Ledger} runs=${jobRuns.filter((r) => !notRun(r))} zone=${zone} />
    <h2>Missed and skipped slots</h2>
    <${Missed} runs=${jobRuns.filter(notRun)} zone=${zone} />
  </section>`;
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

function Actions({ job, onDone }) {
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
        onConfirm=${async () => { await del(jobPath(name)); location.hash = '#/jobs'; }}>
      <p>The job stops firing and its runs leave the ledger. A job created later with this name starts a new generation.</p>
    <//>`}
  </div>`;
}

function Ledger({ runs, zone }) {
  return html`<div class="scroll tall">
    <table class="ledger cards">
      <thead><tr>
        <th scope="col">Slot</th><th scope="col">Kind</th><th scope="col">Attempts</th>
        <th scope="col">Led by</th><th scope="col">Outcome</th><th scope="col">Reason</th><th scope="col">Output</th>
      </tr></thead>
      <tbody>
        ${!runs.length && html`<${Empty} cols="7">No runs yet.<//>`}
        ${runs.map((r) => html`<${LedgerRow} key=${r.id} run=${r} zone=${zone} />`)}
      </tbody>
    </table>
  </div>`;
}

function LedgerRow({ run, zone }) {
  const attempts = run.attempts || [];
  const leaders = [...new Set(attempts.map((a) => a.node_id).filter(Boolean))];
  const last = attempts.at(-1);
  const output = attempts.map((a) => outputText(a.output)).filter(Boolean).at(-1);
  return html`<tr id="run-${run.id}">
    <td>${zoneTime(unixDate(run.slot_unix), zone)}<div class="muted small">${run.id}</div></td>
    <td data-label="Kind">${kindWord(run.kind)}</td>
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
          <td>${reasonText(r.reason)}</td>
        </tr>`)}
      </tbody>
    </table>
  </div>`;
}

// reasonText says why a slot was not run.
function reasonText(reason) {
  if (reason === 'overlap_skipped') return 'skipped: a run was still open (overlap skip)';
  if (reason === 'no_checkin') return 'no check-in within its grace (expect.start_within)';
  if (reason?.startsWith('calendar:')) return html`skipped by calendar <a href="#/calendars/${encodeURIComponent(reason.slice(9))}">${reason.slice(9)}</a>`;
  if (reason?.startsWith('freeze:')) return `skipped by freeze ${reason.slice(7)}`;
  return reason || '—';
}
