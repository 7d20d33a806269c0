package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/raftcron/raftcron/internal/failpoint"
	"github.com/raftcron/raftcron/internal/proc"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	userAgent = "raftcron"
	// maxDrain and drainWait bound the work spent after the first MaxOutput
	// bytes to let the connection be reused; past them the connection is
	// dropped instead.
	maxDrain  = 64 << 10
	drainWait = time.Second
)

// HTTPExecutor delivers attempts with an http target as one request each.
// It is safe for concurrent use.
type HTTPExecutor struct {
	// rt sends the requests. They go to the transport directly: a client
	// would only add the redirects, cookies and timeout the executor does
	// without, and a copy of the request's headers for them.
	rt        http.RoundTripper
	signer    *Signer
	templates templates
}

// HTTPConfig is the node's policy for webhooks. The zero value adds nothing.
type HTTPConfig struct {
	// Egress refuses the addresses requests may not reach (policy.Egress, from
	// --http-deny), checked on each address dialled, after DNS.
	Egress AddrPolicy
	// Resolver resolves webhook hosts; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Signer, if set, signs every attempt into X-Raftcron-Signature.
	Signer *Signer
}

// NewHTTPExecutor returns an executor with no policy, sending through
// client's transport (http.DefaultTransport if it has none), or through a
// transport like NewHTTPExecutorWith's when client is nil. The client's
// redirect policy, cookie jar and timeout are not used: redirects are never
// followed, and each attempt's limits bound its request.
func NewHTTPExecutor(client *http.Client) *HTTPExecutor {
	if client == nil {
		return &HTTPExecutor{rt: newTransport(nil, nil)}
	}
	rt := client.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &HTTPExecutor{rt: rt}
}

// NewHTTPExecutorWith returns an executor under the policy c, sending through
// one shared keep-alive transport of its own. There is no global timeout
// (each request is bounded by its attempt's limits through its context) and
// redirects are not followed: a redirect would send the fencing token
// somewhere the job does not name, so a 3xx is reported as is.
//
// A proxy from the environment (HTTPS_PROXY, HTTP_PROXY) is still used; the
// address then dialled, and checked against c.Egress, is the proxy's, so the
// proxy must enforce its own egress rules.
func NewHTTPExecutorWith(c HTTPConfig) *HTTPExecutor {
	return &HTTPExecutor{rt: newTransport(c.Egress, c.Resolver), signer: c.Signer}
}

func newTransport(egress AddrPolicy, r *net.Resolver) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = newDialer(egress, r).DialContext
	// Many jobs often hit the same few hosts; keep their connections warm
	// instead of re-dialling (and re-handshaking TLS) on every fire.
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	return t
}

// Execute sends the attempt's request and classifies the reply: a status in
// success_codes (any 2xx when empty) succeeds, 409 means fenced, anything
// else fails.
func (h *HTTPExecutor) Execute(ctx context.Context, a Attempt) Outcome {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx = failpoint.HoldAfterCommit(ctx, a.Token)
	out := Outcome{StartedAt: time.Now()}
	t := a.HTTP
	if t == nil {
		return finish(out, pb.RunState_RUN_STATE_FAILED, "no http target")
	}
	if state, detail, ok := proc.Interrupted(ctx, ctx); ok {
		return finish(out, state, detail)
	}
	deadline, timeout := a.Limits()
	lctx, cancel := proc.WithLimit(ctx, deadline, timeout)
	defer cancel()

	req, err := h.newRequest(lctx, a)
	if err != nil {
		return finish(out, pb.RunState_RUN_STATE_FAILED, "invalid request: "+err.Error())
	}
	resp, err := h.rt.RoundTrip(req)
	if err != nil {
		// A refused address is the verdict even if a limit ran out while
		// another address of the host was being tried.
		if denied, ok := asEgressDenied(err); ok {
			return refusedByPolicy(out, ReasonEgressDenied, denied.Error())
		}
		if state, detail, ok := proc.Interrupted(ctx, lctx); ok {
			return finish(out, state, detail)
		}
		return finish(out, pb.RunState_RUN_STATE_FAILED, transportError(err))
	}
	body, complete, err := readOutput(resp, t.GetKeepResponse())
	if err != nil && lctx.Err() != nil {
		resp.Body.Close()
		state, detail, _ := proc.Interrupted(ctx, lctx)
		return finish(out, state, detail)
	}
	if len(body) > 0 {
		out.Output = body
	}
	state, detail := classifyStatus(resp.StatusCode, t.GetSuccessCodes())
	out = finish(out, state, detail)
	if complete {
		// Read to the end: the connection is already free for reuse.
		_ = resp.Body.Close()
	} else {
		release(resp.Body, cancel)
	}
	return out
}

// readOutput reads the first MaxOutput bytes of the reply's body if the job
// keeps it (http.keep_response: a reply may carry data that readers of the
// run ledger must not see). complete reports that the body ended within
// them. An empty reply, the common answer of a webhook, costs no buffer; a
// body not kept is left for release to drain.
func readOutput(resp *http.Response, keep bool) (body []byte, complete bool, err error) {
	if resp.ContentLength == 0 || resp.Body == http.NoBody {
		return nil, true, nil
	}
	if !keep {
		return nil, false, nil
	}
	size := MaxOutput + 1 // one byte more tells a body that ends at MaxOutput from a longer one
	if n := resp.ContentLength; n > 0 && n < int64(size) {
		size = int(n) + 1
	}
	buf := make([]byte, size)
	n, err := io.ReadFull(resp.Body, buf)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return buf[:n:n], true, nil
	case err != nil:
		return buf[:n:n], false, err
	}
	// The buffer filled: more may follow, for release to drain.
	return buf[:MaxOutput:MaxOutput], false, nil
}

// classifyStatus maps a reply status to a run state. 409 comes first: it is
// the downstream saying a newer token exists, whatever success_codes says.
func classifyStatus(code int, success []uint32) (pb.RunState, string) {
	detail := statusDetail(code)
	switch {
	case code == http.StatusConflict:
		return pb.RunState_RUN_STATE_FENCED, "fenced by downstream: 409 Conflict"
	case len(success) == 0 && code >= 200 && code < 300,
		slices.Contains(success, uint32(code)):
		return pb.RunState_RUN_STATE_SUCCEEDED, detail
	default:
		return pb.RunState_RUN_STATE_FAILED, detail
	}
}

// statusDetail is "http 200 OK": "http <code> <text>", without the text
// for codes that have none.
func statusDetail(code int) string {
	if d, ok := commonDetails[code]; ok {
		return d
	}
	return strings.TrimSpace(fmt.Sprintf("http %d %s", code, http.StatusText(code)))
}

// commonDetails are the details of the statuses webhooks usually answer,
// made once instead of per request.
var commonDetails = func() map[int]string {
	m := make(map[int]string)
	for _, c := range []int{200, 201, 202, 204, 400, 401, 403, 404, 409, 429, 500, 502, 503, 504} {
		m[c] = fmt.Sprintf("http %d %s", c, http.StatusText(c))
	}
	return m
}()

// transportError drops the `Post "<url>":` prefix of a *url.Error, which a
// transport other than the executor's own may return: the job already names
// its URL, and URLs may carry credentials in their query.
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// release reads on a little past what was kept so that the connection goes
// back to the idle pool, and gives up (cancel aborts the read and drops the
// connection) when the rest is large or slow to come.
func release(body io.ReadCloser, cancel context.CancelFunc) {
	t := time.AfterFunc(drainWait, cancel)
	_, _ = io.CopyN(io.Discard, body, maxDrain)
	t.Stop()
	_ = body.Close()
}
