// Overview: the answering node and its view of the cluster, the fencing
// counter, and what the runs of the last hour did.
import { html, useEffect, useState } from '../../vendor/preact-htm.js';
import { get } from '../api.js';
import { ErrorNote, StateBadge, Token } from '../components.js';
import { hasNano, isFailure, isOpen, nanoDate } from '../format.js';
import { useRuns } from '../store.js';

// The node's state changes with every commit; a glance every few seconds is
// what an operator reads. Runs arrive live.
const STATUS_EVERY = 5000;
const HOUR = 3600 * 1000;

const version = document.querySelector('meta[name="raftcron-version"]')?.content || '';

function useStatus() {
  const [status, setStatus] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let stop = false;
    const load = async () => {
      try {
        const st = await get('/status');
        if (!stop) {
          setStatus(st);
          setError(null);
        }
      } catch (e) {
        if (!stop) setError(e);
      }
    };
    load();
    const t = setInterval(load, STATUS_EVERY);
    return () => {
      stop = true;
      clearInterval(t);
    };
  }, []);
  return [status, error];
}

// lastHour counts the known runs of the last hour.
export function lastHour(all, now = Date.now()) {
  const out = { fires: 0, failures: 0, missed: 0, inFlight: 0 };
  for (const r of all) {
    if (isOpen(r)) out.inFlight++;
    if (!hasNano(r.created_at_unix_nano) || now - nanoDate(r.created_at_unix_nano).getTime() > HOUR) continue;
    if (r.state === 'RUN_STATE_MISSED') out.missed += Number(r.missed_count || 1);
    else out.fires++;
    if (isFailure(r.state)) out.failures++;
  }
  return out;
}

function Stat({ label, value, tone }) {
  return html`<div class="stat ${tone || ''}"><dt>${label}</dt><dd>${value ?? '—'}</dd></div>`;
}

export function Overview() {
  const [st, error] = useStatus();
  const store = useRuns();
  const counts = lastHour(store.all());
  const s = st || {};
  return html`<section aria-labelledby="ov-title">
    <h1 id="ov-title">Overview</h1>
    <${ErrorNote} error=${error} />
    <dl class="stats">
      <${Stat} label="Fencing counter" value=${st && html`<${Token} value=${String(s.fencing_token ?? 0)} />`} />
      <${Stat} label="Runs in flight" value=${counts.inFlight} tone=${counts.inFlight ? 'busy' : ''} />
      <${Stat} label="Fires, last hour" value=${counts.fires} />
      <${Stat} label="Failures, last hour" value=${counts.failures} tone=${counts.failures ? 'bad' : ''} />
      <${Stat} label="Missed, last hour" value=${counts.missed} tone=${counts.missed ? 'warn' : ''} />
    </dl>
    <p class="muted small">Counted over the newest runs this page has seen (up to 1,000 listed, then live).</p>

    <h2>This node</h2>
    <dl class="facts">
      <dt>ID</dt><dd>${s.id || '—'}</dd>
      <dt>State</dt><dd>${s.state || '—'}</dd>
      <dt>Ready</dt><dd>${st ? html`<span class="badge ${s.ready ? 'ok' : 'bad'}">${s.ready ? 'ready' : 'not ready'}</span>` : '—'}</dd>
      <dt>Leader</dt><dd>${s.leader?.id ? `${s.leader.id} (${s.leader.address})` : st ? 'none known' : '—'}</dd>
      <dt>Term</dt><dd class="num">${s.term ?? '—'}</dd>
      <dt>Commit index</dt><dd class="num">${s.commit_index ?? '—'}</dd>
      <dt>Applied index</dt><dd class="num">${s.applied_index ?? '—'}</dd>
      <dt>Version</dt><dd>${version || '—'}${s.command_version ? ` (commands v${s.command_version})` : ''}</dd>
    </dl>

    <h2>Nodes</h2>
    <div class="scroll">
      <table>
        <thead><tr><th scope="col">Node</th><th scope="col">Address</th><th scope="col">Role</th><th scope="col">Suffrage</th></tr></thead>
        <tbody>
          ${(s.servers || []).map((n) => html`<tr key=${n.id}>
            <th scope="row">${n.id}${n.id === s.id ? html` <span class="muted">(this node)</span>` : ''}</th>
            <td>${n.address}</td>
            <td>${n.leader ? html`<span class="badge ok">leader</span>` : n.id === s.id ? s.state : 'not leader'}</td>
            <td>${n.suffrage}</td>
          </tr>`)}
        </tbody>
      </table>
    </div>

    <h2>Runs in flight</h2>
    <${InFlight} runs=${store.all().filter(isOpen)} />
  </section>`;
}

function InFlight({ runs }) {
  if (!runs.length) return html`<p class="muted">None.</p>`;
  return html`<ul class="plain">${runs.slice(0, 20).map((r) => html`<li key=${r.id}>
    <a href="#/jobs/${encodeURIComponent(r.job)}">${r.job}</a> <${StateBadge} state=${r.state} />
    <span class="muted">${r.id}</span></li>`)}</ul>`;
}
