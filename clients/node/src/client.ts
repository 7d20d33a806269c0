// The HTTP side of the worker protocol (docs/workers.md): any node answers, so a call that
// cannot be served where it went moves to the next address and is retried after a backoff.

/** A call the nodes answered with an error that retrying does not mend (400, 401, 403, …). */
export class ProtocolError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly why: string = "",
  ) {
    super(message);
  }
}

/** What a call came to: 2xx with its JSON, or 409 SUPERSEDED with its `why`. */
export type Answer = { ok: true; doc: Record<string, unknown> } | { ok: false; why: string };

/** Statuses after which a call tries the next node (docs/workers.md, "Retries"). */
const NEXT_NODE = new Set([404, 500, 501, 502, 503, 504]);
const BACKOFF_MIN = 100;
const BACKOFF_MAX = 5000;

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** Normalize `host:port` or an http(s) URL to a base URL without a trailing slash. */
export function baseUrl(addr: string): string {
  const a = addr.trim().replace(/\/+$/, "");
  if (!a) throw new Error("addrs: an empty address");
  return /^https?:\/\//.test(a) ? a : `http://${a}`;
}

/** The path of an attempt's calls, before their `:heartbeat` or `:complete`. */
export function attemptPath(runId: string, token: string): string {
  return `/v1/attempts/${encodeURIComponent(runId)}/${token}`;
}

/** A body already in JSON: sent as is. */
export class JSONText {
  constructor(readonly text: string) {}
}

interface ErrorDoc {
  message?: string;
  details?: { reason?: string; metadata?: Record<string, string> }[];
}

/** The nodes of a cluster, tried in turn; the one that answered last is tried first. */
export class Client {
  private readonly bases: string[];
  private current = 0;
  /** The round trip of the latest call that was not a long poll, in ms. */
  rtt = 0;

  constructor(
    addrs: string[],
    private readonly secret: string | undefined,
    private readonly fetch: typeof globalThis.fetch = globalThis.fetch,
  ) {
    if (addrs.length === 0) throw new Error("addrs: at least one node's HTTP address");
    this.bases = addrs.map(baseUrl);
  }

  /**
   * POST body to path until a node takes it: a 2xx, or a 409 SUPERSEDED (ok: false), or
   * a ProtocolError for an answer that no retry mends. Retries (on the next node, after a
   * backoff) stop at `until` (ms since the epoch) or when `signal` aborts: the last
   * error is thrown then. A status in `unsupported` is thrown at once instead of moving
   * to the next node: the caller has another way to say the same.
   */
  async call(path: string, body: unknown, opts: { until?: number; signal?: AbortSignal; timeout?: number; unsupported?: ReadonlySet<number> } = {}): Promise<Answer> {
    let backoff = BACKOFF_MIN;
    for (;;) {
      let err: Error;
      const begin = Date.now();
      try {
        const answer = await this.once(path, body, opts.signal, opts.timeout ?? 30_000);
        if (!path.endsWith(":poll")) this.rtt = Date.now() - begin;
        return answer;
      } catch (e) {
        if (e instanceof ProtocolError && ((!NEXT_NODE.has(e.status) && e.status !== 429) || opts.unsupported?.has(e.status))) throw e;
        err = e instanceof Error ? e : new Error(String(e));
        if (!(e instanceof ProtocolError) || e.status !== 429) this.current = (this.current + 1) % this.bases.length;
      }
      const wait = backoff / 2 + Math.random() * (backoff / 2);
      if (opts.signal?.aborted || (opts.until !== undefined && Date.now() + wait >= opts.until)) throw err;
      await sleep(wait, opts.signal);
      if (opts.signal?.aborted) throw err;
      backoff = Math.min(backoff * 2, BACKOFF_MAX);
    }
  }

  private async once(path: string, body: unknown, signal: AbortSignal | undefined, timeout: number): Promise<Answer> {
    const base = this.bases[this.current] as string;
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (this.secret) headers["Authorization"] = `Bearer ${this.secret}`;
    const limit = AbortSignal.timeout(timeout);
    const resp = await this.fetch(base + path, {
      method: "POST",
      headers,
      body: body instanceof JSONText ? body.text : JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, limit]) : limit,
    });
    const text = await resp.text();
    let doc: Record<string, unknown> = {};
    try {
      doc = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      if (resp.ok) throw new Error(`${base}${path}: ${resp.status} with a body that is no JSON`);
    }
    if (resp.ok) return { ok: true, doc };
    const e = doc as ErrorDoc;
    const info = e.details?.find((d) => d.reason) ?? {};
    const reason = info.reason ?? "";
    const why = info.metadata?.["why"] ?? "";
    if (resp.status === 409 && reason === "SUPERSEDED") return { ok: false, why };
    throw new ProtocolError(resp.status, reason, `${base}${path}: ${resp.status} ${reason || ""} ${e.message ?? text}`.trim(), why);
  }
}
