// Alerts: the notifications the cluster committed, newest first, with
// their delivery and the receiver's last answer, and the episodes open.
import { html, useEffect, useState } from '../../vendor/preact-htm.js';
import { get, query } from '../api.js';
import { Empty, ErrorNote, When } from '../components.js';
import { hasNano, nanoDate } from '../format.js';
import { setParams } from '../route.js';

const PAGE = 200;

// useAlerts loads /v1/alerts for a job (every job if empty).
export function useAlerts(job, open) {
  const [state, setState] = useState({ alerts: null, episodes: [], error: null });
  const load = async () => {
    try {
      const resp = await get(`/v1/alerts${query({ job, open: open ? 'true' : '', limit: PAGE })}`);
      setState({ alerts: resp.alerts || [], episodes: resp.episodes || [], error: null });
    } catch (e) {
      setState({ alerts: [], episodes: [], error: e });
    }
  };
  useEffect(() => {
    load();
  }, [job, open]);
  return [state, load];
}

export function Alerts({ params }) {
  const job = params.get('job') || '';
  const open = params.get('open') === 'true';
  const [{ alerts, episodes, error }, reload] = useAlerts(job, open);
  const submit = (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    setParams({ job: f.get('job').trim(), open: f.get('open') ? 'true' : '' });
  };
  return html`<section aria-labelledby="alerts-title">
    <h1 id="alerts-title">Alerts</h1>
    <form class="filters" onSubmit=${submit} role="search">
      <label>Job <input name="job" value=${job} placeholder="every job" /></label>
      <label><input type="checkbox" name="open" checked=${open} /> open episodes only</label>
      <button type="submit">Filter</button>
      <button type="button" onClick=${reload}>Refresh</button>
    </form>
    <${ErrorNote} error=${error} />
    <h2>Open episodes</h2>
    <${Episodes} episodes=${episodes} />
    <h2>Notifications</h2>
    <${AlertTable} alerts=${alerts} />
  </section>`;
}

export function Episodes({ episodes }) {
  if (!episodes.length) return html`<p class="muted">None: every job is as expected.</p>`;
  return html`<ul class="episodes">${episodes.map((ep) => html`<li key=${ep.id}>
    <a href="#/jobs/${encodeURIComponent(ep.job)}">${ep.job}</a> <span class="badge warn">${ep.event}</span>
    since <${When} date=${nanoDate(ep.opened_at_unix_nano)} />
    <span class="muted small"> ${ep.id} · ${(ep.channels || []).map((c) => c.channel).join(', ')}</span>
  </li>`)}</ul>`;
}

export function AlertTable({ alerts }) {
  return html`<div class="scroll">
    <table class="alerts cards">
      <thead><tr>
        <th scope="col">When</th><th scope="col">Job</th><th scope="col">Event</th><th scope="col">Channel</th>
        <th scope="col">Delivery</th><th scope="col">Receiver's answer</th>
      </tr></thead>
      <tbody>
        ${alerts === null && html`<${Empty} cols="6">Loading…<//>`}
        ${alerts !== null && !alerts.length && html`<${Empty} cols="6">No alerts.<//>`}
        ${(alerts || []).map((a) => html`<${AlertRow} key=${a.id} alert=${a} />`)}
      </tbody>
    </table>
  </div>`;
}

function AlertRow({ alert: a }) {
  const attempts = a.attempts || [];
  const last = attempts.at(-1);
  const delivery = (a.delivery || '').replace('DELIVERY_STATE_', '').toLowerCase();
  return html`<tr>
    <td>${hasNano(a.at_unix_nano) ? html`<${When} date=${nanoDate(a.at_unix_nano)} />` : '—'}
      <div class="muted small">${a.id}</div></td>
    <td data-label="Job"><a href="#/jobs/${encodeURIComponent(a.job)}">${a.job}</a>
      ${a.run_id && html`<div class="muted small">${a.run_id}</div>`}</td>
    <td data-label="Event">${a.event}${a.reminder ? ` (reminder ${a.reminder})` : ''}
      ${a.reason && html`<div class="muted small">${a.reason}</div>`}</td>
    <td data-label="Channel">${a.channel}</td>
    <td data-label="Delivery"><span class=${delivery === 'delivered' ? 'badge ok' : 'badge warn'}>${delivery}</span>
      <div class="muted small">${a.attempt_count || 0} attempt${a.attempt_count === 1 ? '' : 's'}</div></td>
    <td data-label="Answer">${last ? last.answer : html`<span class="muted">—</span>`}</td>
  </tr>`;
}
