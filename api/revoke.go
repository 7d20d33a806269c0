package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// How a stream ends when the token it was opened with stops working.
var (
	errTokenDeleted = status.Error(codes.Unauthenticated, "ACL token deleted: the streams it opened are closed")
	errTokenExpired = status.Error(codes.Unauthenticated, "ACL token expired: the streams it opened are closed")
)

// openStreams are the streams open on this node under each ACL token: the
// Authorizer checks a token once, when a stream opens, so a stream (a run
// watch, the UI's event stream over it, a worker session, and an HTTP
// worker's long poll, a unary call of longCalls) would otherwise outlive
// its token. Each node ends its own streams as it applies the
// deletion (TokensRevoked, synchronously from Apply), and at the token's
// expiry by its own clock.
type openStreams struct {
	tokens TokenStore
	now    func() time.Time

	mu sync.Mutex
	// byHash holds the open streams by their token's secret hash.
	byHash map[string]map[*openStream]struct{}
}

type openStream struct {
	accessor string
	cancel   context.CancelCauseFunc
}

func newOpenStreams(tokens TokenStore, now func() time.Time) *openStreams {
	return &openStreams{tokens: tokens, now: now, byHash: make(map[string]map[*openStream]struct{})}
}

// open registers a stream of p, if a token ACLs check opened it, and
// returns its context, which ends with errTokenDeleted or errTokenExpired
// when the token stops working, and the func that unregisters it.
func (o *openStreams) open(ctx context.Context, p Principal) (context.Context, func()) {
	if p.secretHash == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	s := &openStream{accessor: p.Accessor, cancel: cancel}
	key := string(p.secretHash)
	o.mu.Lock()
	if o.byHash[key] == nil {
		o.byHash[key] = make(map[*openStream]struct{})
	}
	o.byHash[key][s] = struct{}{}
	o.mu.Unlock()
	stopExpiry := func() bool { return false }
	if !p.expiresAt.IsZero() {
		stopExpiry = time.AfterFunc(p.expiresAt.Sub(o.now()), func() { cancel(errTokenExpired) }).Stop
	}
	// A deletion applied since the Authorizer looked the token up found
	// no stream to end: look again now that this one is registered.
	if !o.live(key, s.accessor) {
		cancel(errTokenDeleted)
	}
	return ctx, func() {
		stopExpiry()
		cancel(nil)
		o.mu.Lock()
		delete(o.byHash[key], s)
		if len(o.byHash[key]) == 0 {
			delete(o.byHash, key)
		}
		o.mu.Unlock()
	}
}

// live reports whether the token of the secret hash key is still the one
// with accessor.
func (o *openStreams) live(key, accessor string) bool {
	t, ok := o.tokens.ACLToken([]byte(key))
	return ok && t.GetAccessorId() == accessor
}

// revoke ends the streams whose token is gone from the state: one lookup
// per token, outside the lock.
func (o *openStreams) revoke() {
	o.mu.Lock()
	held := make(map[string][]*openStream, len(o.byHash))
	for key, set := range o.byHash {
		for s := range set {
			held[key] = append(held[key], s)
		}
	}
	o.mu.Unlock()
	for key, streams := range held {
		t, ok := o.tokens.ACLToken([]byte(key))
		for _, s := range streams {
			if !ok || t.GetAccessorId() != s.accessor {
				s.cancel(errTokenDeleted)
			}
		}
	}
}

// revocation is the status a stream's context ended with because its token
// stopped working, or nil.
func revocation(ctx context.Context) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, errTokenDeleted) || errors.Is(cause, errTokenExpired) {
		return cause
	}
	return nil
}

// TokensRevoked implements fsm.TokenObserver: the streams of tokens gone
// from the state end. It runs from Apply and never blocks: it looks each
// held token up once and cancels contexts.
func (a *Authorizer) TokensRevoked(fsm.Origin) { a.streams.revoke() }

// JobsChanged and RunsChanged make the Authorizer an fsm.Observer: it
// watches tokens only.
func (a *Authorizer) JobsChanged(fsm.Origin, []string) {}

// RunsChanged: see JobsChanged.
func (a *Authorizer) RunsChanged(fsm.Origin, []*pb.Run) {}

var (
	_ fsm.Observer      = (*Authorizer)(nil)
	_ fsm.TokenObserver = (*Authorizer)(nil)
)
