// Jobs: the registry, filterable by name (on this page) and by labels (by
// the node), with each job's next fire, last outcome and recent outcomes.
import { html, useEffect, useState } from '../../vendor/preact-htm.js';
import { get } from '../api.js';
import { setParams } from '../route.js';
import { Empty, ErrorNote, Sparkline, StateBadge, Token, When } from '../components.js';
import { describeSchedule, isOpen, notRun, unixDate } from '../format.js';
import { useRuns } from '../store.js';

const PAGE_SIZE = 100;

// parseLabels reads "team=billing,tier=1" into a selector, or throws
// naming the rule.
export function parseLabels(text) {
  const sel = {};
  for (const part of (text || '').split(',').map((p) => p.trim()).filter(Boolean)) {
    const [k, v, extra] = part.split('=');
    if (!k || v === undefined || extra !== undefined) {
      throw new Error(`labels: "${part}" is not key=value (separate pairs with commas)`);
    }
    sel[k.trim()] = v.trim();
  }
  return sel;
}

function listPath(selector, pageToken) {
  const q = new URLSearchParams({ page_size: String(PAGE_SIZE) });
  for (const [k, v] of Object.entries(selector)) q.set(`label_selector[${k}]`, v);
  if (pageToken) q.set('page_token', pageToken);
  return `/v1/jobs?${q}`;
}

function useJobs(labels) {
  const [state, setState] = useState({ jobs: null, next: '', error: null });
  const load = async (pageToken, prev) => {
    try {
      const resp = await get(listPath(parseLabels(labels), pageToken));
      setState({ jobs: [...(prev || []), ...(resp.jobs || [])], next: resp.next_page_token || '', error: null });
    } catch (e) {
      setState({ jobs: prev || [], next: '', error: e });
    }
  };
  useEffect(() => {
    setState({ jobs: null, next: '', error: null });
    load('', null);
  }, [labels]);
  return [state, () => load(state.next, state.jobs), () => load('', null)];
}

export function Jobs({ params }) {
  const name = params.get('q') || '';
  const labels = params.get('labels') || '';
  const [{ jobs, next, error }, more, reload] = useJobs(labels);
  const store = useRuns();
  const byJob = groupByJob(store.all());
  const shown = (jobs || []).filter((j) => j.spec.name.includes(name.trim()));
  // A next fire that has passed means the job fired: read the registry again.
  const stale = shown.some((j) => Number(j.status?.next_fire_unix || 0) * 1000 < Date.now() - 2000 && j.status?.next_fire_unix);
  useEffect(() => {
    if (!stale) return undefined;
    const t = setTimeout(reload, 3000);
    return () => clearTimeout(t);
  }, [stale, jobs]);

  const submit = (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    setParams({ q: f.get('q'), labels: f.get('labels') });
  };
  return html`<section aria-labelledby="jobs-title">
    <h1 id="jobs-title">Jobs</h1>
    <form class="filters" onSubmit=${submit} role="search">
      <label>Name contains <input name="q" value=${name} /></label>
      <label>Labels <input name="labels" value=${labels} placeholder="team=billing,tier=1" /></label>
      <button type="submit">Filter</button>
    </form>
    <${ErrorNote} error=${error} />
    <div class="scroll">
      <table class="jobs cards">
        <thead><tr>
          <th scope="col">Job</th><th scope="col">Schedule</th><th scope="col">Next fire</th>
          <th scope="col">Last outcome</th><th scope="col">Recent</th><th scope="col">Paused</th>
        </tr></thead>
        <tbody aria-live="off">
          ${jobs === null && html`<${Empty} cols="6">Loading…<//>`}
          ${jobs !== null && !shown.length && html`<${Empty} cols="6">No jobs${name || labels ? ' match' : ''}.<//>`}
          ${shown.map((j) => html`<${JobRow} key=${j.spec.name} job=${j} runs=${byJob.get(j.spec.name) || []} />`)}
        </tbody>
      </table>
    </div>
    ${next && html`<button type="button" onClick=${more}>More jobs</button>`}
  </section>`;
}

function groupByJob(all) {
  const m = new Map();
  for (const r of all) {
    if (!m.has(r.job)) m.set(r.job, []);
    m.get(r.job).push(r);
  }
  return m;
}

function JobRow({ job, runs }) {
  const spec = job.spec;
  const st = job.status || {};
  const zone = spec.timezone || 'UTC';
  // Several schedules show as one line of their specs, without words.
  const text = spec.schedules?.length ? spec.schedules.join(' | ') : spec.schedule;
  const words = spec.schedules?.length ? '' : describeSchedule(spec.schedule);
  const finished = runs.find((r) => !isOpen(r) && !notRun(r));
  const last = finished
    ? { state: finished.state, token: (finished.attempts || []).at(-1)?.token }
    : { state: st.last_outcome, token: st.latest_token };
  const next = Number(st.next_fire_unix || 0);
  return html`<tr>
    <th scope="row"><a href="#/jobs/${encodeURIComponent(spec.name)}">${spec.name}</a>
      ${Object.entries(spec.labels || {}).map(([k, v]) => html` <span class="label">${k}=${v}</span>`)}</th>
    <td data-label="Schedule"><div>${words || html`<code>${text}</code>`}<div class="muted small">
      ${words && html`<code>${text}</code> · `}${zone}</div></div></td>
    <td data-label="Next fire">${next ? html`<${When} date=${unixDate(next)} zone=${zone} />` : html`<span class="muted">never</span>`}</td>
    <td data-label="Last outcome">${last.state ? html`<span><${StateBadge} state=${last.state} /> <${Token} value=${last.token} /></span>` : html`<span class="muted">no runs yet</span>`}</td>
    <td data-label="Recent"><${Sparkline} runs=${runs.filter((r) => !notRun(r))} /></td>
    <td data-label="Paused">${spec.paused ? html`<span><span class="badge warn">paused</span> <span class="note">${spec.pause_note}</span></span>` : html`<span class="muted">no</span>`}</td>
  </tr>`;
}
