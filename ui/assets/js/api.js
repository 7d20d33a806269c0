// The node's JSON API (/v1/) and the UI's own endpoints (/ui/api/), called
// with the signed-in token. The token lives in session storage only: it
// never goes into a URL, and closing the tab forgets it.

const TOKEN_KEY = 'raftcron.token';

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || '',
  set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

// ApiError is a failed call: the HTTP status and the gRPC status of the
// JSON API's error body.
export class ApiError extends Error {
  constructor(httpStatus, code, message) {
    super(message);
    this.httpStatus = httpStatus;
    this.code = code;
  }
}

let unauthenticated = () => {};

// onUnauthenticated sets what happens when the node refuses the token.
export function onUnauthenticated(fn) {
  unauthenticated = fn;
}

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  const t = token.get();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

async function failure(resp) {
  const text = await resp.text();
  let doc = {};
  try {
    doc = JSON.parse(text);
  } catch {
    doc = { message: text.trim() || resp.statusText };
  }
  return new ApiError(resp.status, doc.code ?? 2, doc.message || resp.statusText);
}

// call sends one request and returns the decoded JSON reply.
export async function call(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }), cache: 'no-store' };
  if (body !== undefined) init.body = JSON.stringify(body);
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 14, `cannot reach the node: ${e.message}`);
  }
  if (!resp.ok) {
    const err = await failure(resp);
    if (resp.status === 401) unauthenticated(err);
    throw err;
  }
  const text = await resp.text();
  return text ? JSON.parse(text) : {};
}

export const get = (path) => call('GET', path);
export const post = (path, body = {}) => call('POST', path, body);
export const del = (path) => call('DELETE', path);

// whoami asks who the token (or, with none, the caller) is.
export async function whoami(secret) {
  const h = { Accept: 'application/json' };
  if (secret) h.Authorization = `Bearer ${secret}`;
  const resp = await fetch('/ui/api/whoami', { headers: h, cache: 'no-store' });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

// query builds "?a=1&b=2" from the set values of params.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// watchRuns follows /ui/api/runs/events, reconnecting with backoff, until
// the returned function is called. onReady runs each time a watch is in
// place (list runs then: nothing after it is missed); onRun gets each
// changed run; onStatus gets 'live', 'reconnecting' or an ApiError.
export function watchRuns({ onReady, onRun, onStatus }) {
  const abort = new AbortController();
  let delay = 1000;
  const loop = async () => {
    while (!abort.signal.aborted) {
      try {
        await follow(abort.signal, {
          onReady: () => {
            delay = 1000;
            onStatus('live');
            onReady();
          },
          onRun,
        });
        onStatus('reconnecting');
      } catch (e) {
        if (abort.signal.aborted) return;
        if (e instanceof ApiError && e.httpStatus === 401) {
          unauthenticated(e);
          return;
        }
        onStatus(e instanceof ApiError ? e : new ApiError(0, 14, e.message));
      }
      await sleep(delay, abort.signal);
      delay = Math.min(delay * 2, 15000);
    }
  };
  loop();
  return () => abort.abort();
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}

// follow reads one event stream to its end.
async function follow(signal, { onReady, onRun }) {
  const resp = await fetch('/ui/api/runs/events', { headers: headers({ Accept: 'text/event-stream' }), cache: 'no-store', signal });
  if (!resp.ok) throw await failure(resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const ev = parseFrame(frame);
      if (ev.event === 'ready') onReady();
      else if (ev.event === 'run') onRun(JSON.parse(ev.data));
      else if (ev.event === 'error') {
        const d = JSON.parse(ev.data);
        throw new ApiError(0, d.code, d.message);
      }
    }
  }
}

function parseFrame(frame) {
  const ev = { event: 'message', data: '' };
  for (const line of frame.split('\n')) {
    if (line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'event') ev.event = value;
    else if (field === 'data') ev.data += value;
  }
  return ev;
}
