// The runs this page knows: listed once per watch, then kept current by the
// node's run events (one stream for every page). Bursts of events cost one
// render per animation frame.
import { useEffect, useState } from '../vendor/preact-htm.js';
import { get, query, watchRuns } from './api.js';
import { isOpen } from './format.js';

// Runs kept at most; the oldest finished ones go first.
const MAX_RUNS = 2000;
// Runs listed each time the watch (re)connects.
const LIST_LIMIT = 1000;
// Pages followed to fill a list: a token scoped to few jobs of a large
// ledger gets short pages, each the node's bounded look at it.
const LIST_PAGES = 10;

// progress orders two versions of one run: more attempts, then finished
// over open. A listed run never replaces a later event's version.
function progress(run) {
  return (run.attempts || []).length * 2 + (isOpen(run) ? 0 : 1);
}

class RunStore {
  constructor() {
    this.runs = new Map();
    this.status = 'connecting';
    this.listeners = new Set();
    this.stop = null;
    this.pending = false;
  }

  start() {
    if (this.stop) return;
    this.stop = watchRuns({
      onReady: () => this.list({}),
      onRun: (run) => this.put(run, true),
      onStatus: (s) => {
        this.status = s;
        this.changed();
      },
    });
  }

  close() {
    if (this.stop) this.stop();
    this.stop = null;
    this.runs.clear();
    this.status = 'connecting';
  }

  // list merges the newest runs (of one job, or all) into the store.
  async list({ job }) {
    try {
      let listed = 0;
      let page_token;
      for (let page = 0; page < LIST_PAGES && listed < LIST_LIMIT; page++) {
        const resp = await get(`/v1/runs${query({ job, limit: LIST_LIMIT - listed, page_token })}`);
        for (const r of resp.runs || []) this.put(r, false);
        listed += (resp.runs || []).length;
        page_token = resp.next_page_token;
        if (!page_token) break;
      }
      this.changed();
    } catch (e) {
      this.status = e;
      this.changed();
    }
  }

  put(run, fromEvent) {
    let old = this.runs.get(run.id);
    if (old && run.job_deleted && !old.job_deleted) {
      // Its job was deleted since: the mark holds whichever version wins.
      old = { ...old, job_deleted: true };
      this.runs.set(run.id, old);
    }
    if (old && (fromEvent ? progress(run) < progress(old) : progress(run) <= progress(old))) return;
    this.runs.set(run.id, run);
    if (this.runs.size > MAX_RUNS) this.evict();
    if (fromEvent) this.changed();
  }

  evict() {
    const finished = [...this.runs.values()].filter((r) => !isOpen(r)).sort(byNewest);
    for (const r of finished.slice(MAX_RUNS * 0.9)) this.runs.delete(r.id);
  }

  // all is every known run, newest first.
  all() {
    return [...this.runs.values()].sort(byNewest);
  }

  changed() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      for (const fn of this.listeners) fn();
    });
  }

  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

export function byNewest(a, b) {
  const d = BigInt(b.created_at_unix_nano || 0) - BigInt(a.created_at_unix_nano || 0);
  if (d !== 0n) return d > 0n ? 1 : -1;
  return a.id < b.id ? 1 : -1;
}

export const runs = new RunStore();

// useRuns re-renders the calling component whenever the store changes.
export function useRuns() {
  const [, setTick] = useState(0);
  useEffect(() => runs.subscribe(() => setTick((t) => t + 1)), []);
  return runs;
}
