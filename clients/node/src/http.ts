// A fence for node:http servers and Express-style apps: parse and verify the dispatch,
// then hand the run and the raw body to the handler.
import type { IncomingMessage, ServerResponse } from "node:http";
import { Refused, Verifier, type Run } from "./fence.js";

/** What the middleware puts on the request for the handler. */
export interface Dispatch {
  run: Run;
  body: Buffer;
}

declare module "node:http" {
  interface IncomingMessage {
    /** Set by the raftcron middleware once the dispatch is verified. */
    raftcron?: Dispatch;
  }
}

class BodyTooLarge extends Refused {
  override readonly status = 413;
}

export interface MiddlewareOptions {
  /** The URL the nodes sent the request to, behind a proxy that terminates TLS or rewrites paths. */
  requestUrl?: (req: IncomingMessage) => string;
  /** The largest body read (default 1 MiB; raftcron sends at most 64 KiB). */
  maxBody?: number;
}

/** The URL as received: https when over TLS, the Host header, and the path and query. */
export function receivedUrl(req: IncomingMessage): string {
  const tls = (req.socket as { encrypted?: boolean }).encrypted === true;
  const path = (req as { originalUrl?: string }).originalUrl ?? req.url ?? "/";
  return `${tls ? "https" : "http"}://${req.headers.host ?? ""}${path}`;
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of req) {
    n += (chunk as Buffer).length;
    if (n > max) throw new BodyTooLarge(`body larger than ${max} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

/**
 * Express-style middleware `(req, res, next)` that refuses an unsigned, forged or
 * malformed dispatch (400/401/403 with a JSON error) and otherwise sets `req.raftcron`
 * ({run, body}) and calls next. It reads the body itself: mount it before body parsers.
 * With plain node:http, call it with a `next` that runs your handler.
 */
export function middleware(verifier: Verifier, opts: MiddlewareOptions = {}) {
  const url = opts.requestUrl ?? receivedUrl;
  const max = opts.maxBody ?? 1 << 20;
  return (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void => {
    readBody(req, max).then(
      (body) => {
        try {
          const run = verifier.checkRequest(req.method ?? "", url(req), req.headersDistinct, body);
          req.raftcron = { run, body };
        } catch (err) {
          if (err instanceof Refused) return answer(res, err.status, err.body);
          return next(err);
        }
        next();
      },
      (err: unknown) => (err instanceof Refused ? answer(res, err.status, err.body) : next(err)),
    );
  };
}

/** Answer a Stale or Duplicate from fenceSql as raftcron expects (409, or 200 duplicate). */
export function answerRefused(res: ServerResponse, err: unknown): boolean {
  if (!(err instanceof Refused)) return false;
  answer(res, err.status, err.body);
  return true;
}
