// Runs: every run as it changes (the node's run events), filterable, with
// cancel for a run in flight.
import { html, useEffect, useState } from '../../vendor/preact-htm.js';
import { post } from '../api.js';
import { AttemptTokens, Confirm, Empty, Progress, StateBadge, When } from '../components.js';
import { hasNano, isFailure, isOpen, kindWord, nanoDate, notRun, unixDate, zoneTime } from '../format.js';
import { roles, setParams } from '../route.js';
import { useRuns } from '../store.js';

// Rows drawn at most; the filter narrows the rest.
const MAX_ROWS = 200;

const filters = {
  '': ['every state', () => true],
  open: ['in flight', isOpen],
  succeeded: ['succeeded', (r) => r.state === 'RUN_STATE_SUCCEEDED'],
  failed: ['failed', (r) => isFailure(r.state)],
  missed: ['missed or skipped', notRun],
  cancelled: ['cancelled', (r) => r.state === 'RUN_STATE_CANCELLED'],
};

export function LiveStatus({ status }) {
  if (status === 'live') return html`<span class="live" role="status"><span class="dot" aria-hidden="true"></span> live</span>`;
  if (status === 'connecting' || status === 'reconnecting') return html`<span class="live off" role="status">${status}…</span>`;
  return html`<span class="live off" role="status" title=${status.message}>not live: ${status.message}</span>`;
}

export function Runs({ params, me }) {
  const job = params.get('job') || '';
  const state = params.get('state') || '';
  const store = useRuns();
  const [cancelling, setCancelling] = useState(null);
  useEffect(() => {
    if (job && store.status === 'live') store.list({ job });
  }, [job, store.status]);
  const keep = (filters[state] || filters[''])[1];
  const shown = store.all().filter((r) => (!job || r.job === job) && keep(r));
  const canCancel = roles.write(me.role);

  const submit = (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    setParams({ job: f.get('job').trim(), state: f.get('state') });
  };
  return html`<section aria-labelledby="runs-title">
    <h1 id="runs-title">Runs <${LiveStatus} status=${store.status} /></h1>
    <form class="filters" onSubmit=${submit} role="search">
      <label>Job <input name="job" value=${job} placeholder="every job" /></label>
      <label>State <select name="state" value=${state}>
        ${Object.entries(filters).map(([k, [label]]) => html`<option value=${k} selected=${k === state}>${label}</option>`)}
      </select></label>
      <button type="submit">Filter</button>
    </form>
    <div class="scroll tall">
      <table class="runs cards">
        <thead><tr>
          <th scope="col">Run</th><th scope="col">Slot</th><th scope="col">Kind</th><th scope="col">State</th>
          <th scope="col">Tokens</th><th scope="col">Node</th><th scope="col">Created</th><th scope="col"><span class="sr">Actions</span></th>
        </tr></thead>
        <tbody>
          ${!shown.length && html`<${Empty} cols="8">No runs${job || state ? ' match' : ' yet'}.<//>`}
          ${shown.slice(0, MAX_ROWS).map((r) => html`<${RunRow} key=${r.id} run=${r}
              onCancel=${canCancel && isOpen(r) ? () => setCancelling(r) : null} />`)}
        </tbody>
      </table>
    </div>
    ${shown.length > MAX_ROWS && html`<p class="muted small">Showing the newest ${MAX_ROWS} of ${shown.length}; filter to see others.</p>`}
    ${cancelling && html`<${Confirm} title="Cancel run ${cancelling.id}" action="Cancel run" danger
        onClose=${() => setCancelling(null)}
        onConfirm=${async () => {
          const { run } = await post(`/v1/runs/${encodeURIComponent(cancelling.id)}:cancel`);
          if (run) store.put(run, true);
        }}>
      <p>The cancel is committed through the log; the executor stops the attempt and the run
        ends as cancelled. It is not retried or re-dispatched.</p>
    <//>`}
  </section>`;
}

function RunRow({ run, onCancel }) {
  const last = (run.attempts || []).at(-1);
  return html`<tr>
    <td>${run.job_deleted ? html`${run.job} <span class="muted small">(deleted job)</span>`
        : html`<a href="#/jobs/${encodeURIComponent(run.job)}">${run.job}</a>`}<div class="muted small">${run.id}</div></td>
    <td data-label="Slot">${zoneTime(unixDate(run.slot_unix), 'UTC')}</td>
    <td data-label="Kind">${kindWord(run.kind)}</td>
    <td data-label="State"><div><${StateBadge} state=${run.state} />${run.reason && html`<div class="muted small">${run.reason}</div>`}
      ${isOpen(run) && html`<${Progress} attempt=${last} />`}</div></td>
    <td data-label="Tokens"><${AttemptTokens} run=${run} /></td>
    <td data-label="Node">${last?.node_id || '—'}</td>
    <td data-label="Created">${hasNano(run.created_at_unix_nano) ? html`<${When} date=${nanoDate(run.created_at_unix_nano)} />` : '—'}</td>
    <td class="act">${onCancel && html`<button type="button" class="danger small" onClick=${onCancel}
        aria-label="Cancel run ${run.id}">Cancel</button>`}</td>
  </tr>`;
}
