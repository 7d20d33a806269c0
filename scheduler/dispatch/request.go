package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/raftcron/raftcron/fence"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// maxTemplates bounds the request templates kept, about 1 KiB each; past it
// the cache starts over. A template keeps its target alive until then, so
// the bound is also what replaced specs may hold on to.
const maxTemplates = 16 << 10

// template is what every request to one http target has in common: its
// method, parsed URL, Host, body and the job's own headers. Building it is
// most of the work of a request besides the attempt's own headers, and a
// job fires the same target over and over.
type template struct {
	req    *http.Request // copied for each attempt (WithContext), which gets its own body and header
	header http.Header   // User-Agent, the job's headers and Basic auth from the URL, canonical
	// What a v2 signature covers of the request besides the run: the URL as
	// sent (fence.SentURL) and the body's digest.
	url     string
	bodySHA [sha256.Size]byte
}

// templates caches a template per target. It is keyed by the target's
// pointer: the FSM never changes a spec it has stored (a new generation is a
// new message), so one pointer always means one content, and holding it as
// a key keeps its address from being reused by another target. A sync.Map:
// its keys are written once and read on every attempt, by every worker.
type templates struct {
	m sync.Map // *pb.HttpTarget → *template
	n atomic.Int64
}

// get returns t's template, built on its first use. A target that cannot
// make a request is not cached: its every attempt fails the same way.
func (c *templates) get(t *pb.HttpTarget) (*template, error) {
	if tp, ok := c.m.Load(t); ok {
		return tp.(*template), nil
	}
	tp, err := newTemplate(t)
	if err != nil {
		return nil, err
	}
	if c.n.Add(1) > maxTemplates {
		c.m.Clear()
		c.n.Store(1)
	}
	got, _ := c.m.LoadOrStore(t, tp)
	return got.(*template), nil
}

// newTemplate builds t's template. The method is the stored one: the API
// stores it filled in (jobspec.Normalize), so the executor keeps no default
// of its own.
func newTemplate(t *pb.HttpTarget) (*template, error) {
	var body io.Reader // none: the transport sends an empty body
	if t.GetBody() != "" {
		body = strings.NewReader(t.GetBody())
	}
	req, err := http.NewRequest(t.GetMethod(), t.GetUrl(), body)
	if err != nil {
		return nil, err
	}
	hd := make(http.Header, len(t.GetHeaders())+2)
	hd["User-Agent"] = []string{userAgent}
	for k, v := range t.GetHeaders() {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		hd.Set(k, v)
	}
	// What http.Client would add: the request is sent by the transport
	// itself (see Execute).
	if u := req.URL.User; u != nil && hd.Get("Authorization") == "" {
		pass, _ := u.Password()
		hd.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pass)))
	}
	req.Body = nil // each attempt reads a copy of its own, from GetBody
	return &template{req: req, header: hd, url: fence.SentURL(req), bodySHA: sha256.Sum256([]byte(t.GetBody()))}, nil
}

// attemptHeaders is how many headers newRequest adds to a template's.
const attemptHeaders = 7

// newRequest is a's request: the template of its target with a's own
// headers, bound to ctx.
func (h *HTTPExecutor) newRequest(ctx context.Context, a Attempt) (*http.Request, error) {
	tp, err := h.templates.get(a.HTTP)
	if err != nil {
		return nil, err
	}
	req := tp.req.WithContext(ctx)
	if req.GetBody != nil {
		req.Body, _ = req.GetBody() // a fresh reader of the body; never fails
	}
	hd := make(http.Header, len(tp.header)+attemptHeaders)
	for k, v := range tp.header {
		hd[k] = v // shared: nothing appends to or changes a request's header values
	}
	req.Header = hd
	// One backing array for the values of the headers set here; the keys
	// are constants in canonical form, so no Set is needed to canonicalise
	// them. Set last: the job's own headers must not be able to forge these.
	at := a.scheduledAt()
	vals := [attemptHeaders]string{a.token(), a.Job, a.RunID, at, a.number(), a.idempotencyKey(at), ""}
	hd[fence.HeaderFencingToken] = vals[0:1:1]
	hd[fence.HeaderJob] = vals[1:2:2]
	hd[fence.HeaderRunID] = vals[2:3:3]
	hd[fence.HeaderScheduledAt] = vals[3:4:4]
	hd[fence.HeaderAttempt] = vals[4:5:5]
	hd[fence.HeaderIdempotencyKey] = vals[5:6:6]
	if h.signer != nil {
		if vals[6], err = h.signer.signHTTP(a.FenceRun(), req.Method, tp.url, tp.bodySHA); err != nil {
			return nil, err
		}
		hd[fence.HeaderSignature] = vals[6:7:7]
	}
	if a.ParentRuns != "" {
		hd[fence.HeaderParentRuns] = []string{a.ParentRuns}
	}
	return req, nil
}
