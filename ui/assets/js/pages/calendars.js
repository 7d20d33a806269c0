// Calendars and freezes: the calendars jobs refer to (each with its
// entries and the jobs that use it) and the freezes that may stop the
// signed-in token's jobs. Changing them is the CLI's and the JSON API's.
import { html, useEffect, useState } from '../../vendor/preact-htm.js';
import { get } from '../api.js';
import { Empty, ErrorNote, When } from '../components.js';

function useGet(path) {
  const [state, setState] = useState({ data: null, error: null });
  useEffect(() => {
    get(path).then((data) => setState({ data, error: null }), (error) => setState({ data: null, error }));
  }, [path]);
  return state;
}

const labelList = (labels) => Object.entries(labels || {}).map(([k, v]) => html` <span class="label">${k}=${v}</span>`);

export function Calendars() {
  const cals = useGet('/v1/calendars');
  const freezes = useGet('/v1/freezes');
  const now = Date.now();
  return html`<section aria-labelledby="calendars-title">
    <h1 id="calendars-title">Calendars</h1>
    <p class="muted">A job's <code>calendars</code> leave out the slots of its exclude calendars and keep only those of its only calendars; the others are recorded skipped.</p>
    <${ErrorNote} error=${cals.error} />
    <div class="scroll"><table class="cards">
      <thead><tr><th scope="col">Name</th><th scope="col">Zone</th><th scope="col">Entries</th><th scope="col">Updated</th></tr></thead>
      <tbody>
        ${cals.data && !(cals.data.calendars || []).length && html`<${Empty} cols="4">No calendars.<//>`}
        ${(cals.data?.calendars || []).map((c) => html`<tr key=${c.spec.name}>
          <th scope="row"><a href="#/calendars/${encodeURIComponent(c.spec.name)}">${c.spec.name}</a>${labelList(c.spec.labels)}
            ${c.spec.description && html`<div class="muted small">${c.spec.description}</div>`}</th>
          <td data-label="Zone">${c.spec.timezone || 'UTC'}</td>
          <td data-label="Entries" class="num">${c.entry_count || 0}</td>
          <td data-label="Updated">${c.updated_at ? html`<${When} date=${new Date(c.updated_at)} />` : '—'}${c.updated_by ? ` by ${c.updated_by}` : ''}</td>
        </tr>`)}
      </tbody>
    </table></div>

    <h2>Freezes</h2>
    <p class="muted">The slots of the matching jobs inside a freeze are recorded skipped; a deferring freeze fires each job's last one when it lifts.</p>
    <${ErrorNote} error=${freezes.error} />
    <div class="scroll"><table class="cards">
      <thead><tr><th scope="col">Name</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Jobs</th><th scope="col">Note</th></tr></thead>
      <tbody>
        ${freezes.data && !(freezes.data.freezes || []).length && html`<${Empty} cols="5">No freezes.<//>`}
        ${(freezes.data?.freezes || []).map((f) => {
          const from = new Date(f.from), to = new Date(f.to);
          const state = to.getTime() <= now ? 'over' : from.getTime() <= now ? 'in force' : 'ahead';
          return html`<tr key=${f.name}>
            <th scope="row">${f.name} <span class="badge ${state === 'in force' ? 'warn' : 'quiet'}">${state}</span>
              ${f.defer && html` <span class="badge quiet" title="each job's last slot inside fires once it lifts">defers</span>`}</th>
            <td data-label="From"><${When} date=${from} /></td>
            <td data-label="To"><${When} date=${to} /></td>
            <td data-label="Jobs">${Object.keys(f.selector || {}).length ? labelList(f.selector) : 'every job'}</td>
            <td data-label="Note">${f.note || html`<span class="muted">—</span>`}</td>
          </tr>`;
        })}
      </tbody>
    </table></div>
  </section>`;
}

export function CalendarPage({ name }) {
  const { data, error } = useGet(`/v1/calendars/${encodeURIComponent(name)}`);
  if (!data) {
    return html`<section><h1>${name}</h1>${error ? html`<${ErrorNote} error=${error} />` : html`<p class="loading">Loading…</p>`}</section>`;
  }
  const c = data.calendar;
  const used = data.used_by || [];
  return html`<section aria-labelledby="calendar-title">
    <p class="crumbs"><a href="#/calendars">Calendars</a> /</p>
    <h1 id="calendar-title">${c.spec.name}${labelList(c.spec.labels)}</h1>
    ${c.spec.description && html`<p>${c.spec.description}</p>`}
    <dl class="facts">
      <dt>Zone</dt><dd>${c.spec.timezone || 'UTC'}</dd>
      <dt>Version</dt><dd class="num">${c.version || '0'}</dd>
      <dt>Used by</dt><dd>${used.length ? used.map((j, i) => html`${i ? ', ' : ''}<a href="#/jobs/${encodeURIComponent(j)}">${j}</a>`) : 'no job'}</dd>
    </dl>
    <h2>Entries</h2>
    <div class="scroll tall"><table>
      <thead><tr><th scope="col">Entry</th><th scope="col">Note</th></tr></thead>
      <tbody>
        ${!(c.spec.entries || []).length && html`<${Empty} cols="2">No entries: the calendar contains nothing.<//>`}
        ${(c.spec.entries || []).map((e, i) => html`<tr key=${i}><td><code>${entryText(e)}</code></td><td>${e.note || ''}</td></tr>`)}
      </tbody>
    </table></div>
  </section>`;
}

// entryText is an entry as one line: a date, a range [from, to), or a
// weekly window.
function entryText(e) {
  if (e.date) return e.date;
  if (e.days?.length) return e.days.join(', ') + (e.between ? ' ' + e.between : ' (whole day)');
  return `${e.from} – ${e.to}`;
}
