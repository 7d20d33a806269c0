// Audit: who changed what, when; newest first, pages of older records on
// demand.
import { html, useEffect, useState } from '../../vendor/preact-htm.js';
import { get, query } from '../api.js';
import { Empty, ErrorNote, When } from '../components.js';
import { hasNano, nanoDate } from '../format.js';
import { setParams } from '../route.js';

const PAGE = 100;

export function Audit({ params }) {
  const job = params.get('job') || '';
  const [state, setState] = useState({ records: null, more: false, error: null });
  const load = async (before, prev) => {
    try {
      const resp = await get(`/v1/audit${query({ job, limit: PAGE, before_seq: before })}`);
      const recs = resp.records || [];
      setState({ records: [...(prev || []), ...recs], more: recs.length === PAGE, error: null });
    } catch (e) {
      setState({ records: prev || [], more: false, error: e });
    }
  };
  useEffect(() => {
    setState({ records: null, more: false, error: null });
    load('', null);
  }, [job]);
  const submit = (e) => {
    e.preventDefault();
    setParams({ job: new FormData(e.target).get('job').trim() });
  };
  const { records, more, error } = state;
  return html`<section aria-labelledby="audit-title">
    <h1 id="audit-title">Audit</h1>
    <form class="filters" onSubmit=${submit} role="search">
      <label>Job <input name="job" value=${job} placeholder="every job" /></label>
      <button type="submit">Filter</button>
      <button type="button" onClick=${() => load('', null)}>Refresh</button>
    </form>
    <${ErrorNote} error=${error} />
    <div class="scroll">
      <table class="audit cards">
        <thead><tr>
          <th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Job</th>
          <th scope="col">Version</th><th scope="col">Changes</th>
        </tr></thead>
        <tbody>
          ${records === null && html`<${Empty} cols="6">Loading…<//>`}
          ${records !== null && !records.length && html`<${Empty} cols="6">No records.<//>`}
          ${(records || []).map((r) => html`<${Record} key=${r.seq} rec=${r} />`)}
        </tbody>
      </table>
    </div>
    ${more && html`<button type="button" onClick=${() => load(records.at(-1).seq, records)}>Older records</button>`}
  </section>`;
}

function Record({ rec }) {
  return html`<tr>
    <td>${hasNano(rec.at_unix_nano) ? html`<${When} date=${nanoDate(rec.at_unix_nano)} />` : '—'}
      <div class="muted small">#${rec.seq} · index ${rec.index}</div></td>
    <td data-label="Who">${rec.principal}</td>
    <td data-label="Action"><div>${rec.action}${rec.run_id && html`<div class="muted small">${rec.run_id}</div>`}</div></td>
    <td data-label="Job">${rec.job ? html`<a href="#/jobs/${encodeURIComponent(rec.job)}">${rec.job}</a>` : '—'}</td>
    <td data-label="Version" class="num">${rec.version_before || rec.version_after ? `${rec.version_before || 0} → ${rec.version_after || 0}` : '—'}</td>
    <td data-label="Changes">${(rec.changes || []).length
      ? html`<ul class="changes">${rec.changes.map((c) => html`<li key=${c.field}><code>${c.field}</code>${': '}<span class="before">${c.before || '∅'}</span> → <span class="after">${c.after || '∅'}</span></li>`)}</ul>`
      : html`<span class="muted">—</span>`}</td>
  </tr>`;
}
