// Small pieces every page uses.
import { html, useEffect, useRef, useState } from '../vendor/preact-htm.js';
import { lastAttempt, relative, stateTone, stateWord, zoneTime } from './format.js';

export function StateBadge({ state }) {
  return html`<span class="badge ${stateTone(state)}">${stateWord(state)}</span>`;
}

// Token shows a fencing token; tokens are the product's proof of order.
export function Token({ value }) {
  if (!value || value === '0') return html`<span class="muted">—</span>`;
  return html`<span class="token" title="fencing token">#${value}</span>`;
}

// When shows a time with its relative distance; zone is the job's.
export function When({ date, zone }) {
  if (!date || isNaN(date)) return html`<span class="muted">—</span>`;
  return html`<time datetime=${date.toISOString()} title=${date.toISOString()}>
    ${zoneTime(date, zone)} <span class="muted">(${relative(date)})</span></time>`;
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.message || String(error)}</p>`;
}

// Sparkline draws the outcomes of a job's recent runs, oldest first, in a
// box of fixed size so that a table does not move when runs arrive.
export function Sparkline({ runs, slots = 12 }) {
  const recent = runs.slice(0, slots).reverse();
  const w = 6;
  const gap = 2;
  const counts = {};
  for (const r of recent) counts[stateWord(r.state)] = (counts[stateWord(r.state)] || 0) + 1;
  const label = recent.length
    ? 'recent outcomes: ' + Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(', ')
    : 'no recent runs';
  return html`<svg class="spark" role="img" aria-label=${label} width=${slots * (w + gap)} height="16"
      viewBox="0 0 ${slots * (w + gap)} 16">
    <title>${label}</title>
    ${recent.map((r, i) => html`<rect key=${r.id} class="tone-${stateTone(r.state)}"
      x=${(slots - recent.length + i) * (w + gap)} y=${stateTone(r.state) === 'ok' ? 4 : 0}
      width=${w} height=${stateTone(r.state) === 'ok' ? 12 : 16} rx="1" />`)}
  </svg>`;
}

// AttemptTokens lists a run's attempts as their tokens.
export function AttemptTokens({ run }) {
  const a = run.attempts || [];
  if (!a.length) return html`<span class="muted">—</span>`;
  return html`<span class="tokens">${a.map((x) => html`<${Token} key=${x.number} value=${x.token} />`)}</span>`;
}

export const currentToken = (run) => (lastAttempt(run) || {}).token;

// Progress is a remote worker's last report of the attempt in flight:
// a bar for its percentage and its message.
export function Progress({ attempt }) {
  if (!attempt || (attempt.progress === undefined && !attempt.progress_message)) return null;
  const pct = attempt.progress;
  return html`<div class="progress small">
    ${pct !== undefined && html`<progress max="100" value=${pct} aria-hidden="true"></progress> ${pct}%`}
    ${attempt.progress_message && html` <span class="muted">${attempt.progress_message}</span>`}
  </div>`;
}

// Confirm is a modal dialog: focus stays inside it, Escape cancels.
// children are the question; onConfirm gets the form's values.
export function Confirm({ title, action, danger, onConfirm, onClose, children }) {
  const ref = useRef();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  useEffect(() => {
    const d = ref.current;
    d.showModal();
    return () => d.open && d.close();
  }, []);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await onConfirm(Object.fromEntries(new FormData(e.target)));
      onClose();
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return html`<dialog ref=${ref} class="dialog" aria-labelledby="dialog-title" onClose=${onClose}>
    <form method="dialog" onSubmit=${submit}>
      <h2 id="dialog-title">${title}</h2>
      ${children}
      <${ErrorNote} error=${error} />
      <div class="actions">
        <button type="button" onClick=${onClose}>Cancel</button>
        <button type="submit" class=${danger ? 'danger' : 'primary'} disabled=${busy}>${action}</button>
      </div>
    </form>
  </dialog>`;
}

// Empty fills a table body that has nothing to show, at the height of one row.
export function Empty({ cols, children }) {
  return html`<tr class="empty"><td colspan=${cols}>${children}</td></tr>`;
}
