// Overview: the answering node and its view of the cluster, the fencing
// counter, and what the runs of the last hour did (the cluster's replicated
// counts, in /status: every run, not only those the history limits keep).
import { html, useEffect, useState } from '../../vendor/preact-htm.js';
import { get } from '../api.js';
import { ErrorNote, StateBadge, Token } from '../components.js';
import { isOpen } from '../format.js';
import { useRuns } from '../store.js';

// The node's state changes with every commit; a glance every few seconds is
// what an operator reads. Runs arrive live.
const STATUS_EVERY = 5000;

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

function Stat({ label, value, tone }) {
  return html`<div class="stat ${tone || ''}"><dt>${label}</dt><dd>${value ?? '—'}</dd></div>`;
}

export function Overview() {
  const [st, error] = useStatus();
  const store = useRuns();
  const open = store.all().filter(isOpen);
  const s = st || {};
  const hour = s.last_hour || {};
  return html`<section aria-labelledby="ov-title">
    <h1 id="ov-title">Overview</h1>
    <${ErrorNote} error=${error} />
    <dl class="stats">
      <${Stat} label="Fencing counter" value=${st && html`<${Token} value=${String(s.fencing_token ?? 0)} />`} />
      <${Stat} label="Runs in flight" value=${open.length} tone=${open.length ? 'busy' : ''} />
      <${Stat} label="Fires, last hour" value=${hour.fires} />
      <${Stat} label="Failures, last hour" value=${hour.failures} tone=${hour.failures ? 'bad' : ''} />
      <${Stat} label="Missed, last hour" value=${hour.missed} tone=${hour.missed ? 'warn' : ''} />
    </dl>
    <p class="muted small">Every run of the last hour, from the cluster's own counts (history limits prune none of them).</p>

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
      <table class="nodes">
        <thead><tr><th scope="col">Node</th><th scope="col">Address</th><th scope="col">Role</th><th scope="col">Suffrage</th><th scope="col">Contact</th></tr></thead>
        <tbody>
          ${(s.servers || []).map((n) => html`<tr key=${n.id}>
            <th scope="row">${n.id}${n.id === s.id ? html` <span class="muted">(this node)</span>` : ''}</th>
            <td>${n.address}</td>
            <td>${n.leader ? html`<span class="badge ok">leader</span>` : n.id === s.id ? s.state : 'not leader'}</td>
            <td>${n.suffrage}</td>
            <td><${Contact} server=${n} /></td>
          </tr>`)}
        </tbody>
      </table>
    </div>

    <h2>Runs in flight</h2>
    <${InFlight} runs=${open} />
  </section>`;
}

// Contact is whether the answering node hears from a server: the leader
// knows it of every server, a follower of itself and the leader only.
export function Contact({ server }) {
  if (server.contact === 'unreachable') {
    const last = server.last_contact ? `last heard from ${new Date(server.last_contact).toLocaleString()}` : 'never heard from';
    return html`<span class="badge bad" title=${last}>unreachable</span>`;
  }
  if (server.contact === 'reachable') return html`<span class="badge ok">reachable</span>`;
  return html`<span class="muted" title="Only the leader hears from every node">unknown here</span>`;
}

function InFlight({ runs }) {
  if (!runs.length) return html`<p class="muted">None.</p>`;
  return html`<ul class="plain">${runs.slice(0, 20).map((r) => html`<li key=${r.id}>
    <a href="#/jobs/${encodeURIComponent(r.job)}">${r.job}</a> <${StateBadge} state=${r.state} />
    <span class="muted">${r.id}</span></li>`)}</ul>`;
}
