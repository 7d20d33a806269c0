package api

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/remote"
)

// Anyone who reaches a node may call BootstrapAcl. Once the cluster is
// bootstrapped each call is answered from the node's state: before, every
// call committed an entry that the FSM refused, so 20 calls moved the
// commit index by 20. A node that has applied the bootstrap needs no read
// barrier either (on a lagging follower, one may append an entry).
func TestBootstrapOfABootstrappedClusterWritesNothing(t *testing.T) {
	h := newACLHarness(t, true)
	mgmt := h.bootstrap(t)
	ctx := testCtx(t)
	h.store.mu.Lock()
	before := h.store.index
	h.store.mu.Unlock()
	barriers := h.store.barrierCount()
	for i := range 20 {
		call := ctx
		if i%2 == 1 {
			call = with(ctx, mgmt)
		}
		_, err := h.acl.BootstrapAcl(call, &pb.BootstrapAclRequest{})
		if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "bootstrapped already") {
			t.Fatalf("bootstrap #%d: %q, want it to say ACLs are bootstrapped already", i+2, st.Message())
		}
	}
	h.store.mu.Lock()
	after := h.store.index
	h.store.mu.Unlock()
	if after != before {
		t.Fatalf("20 refused bootstraps committed %d entries, want none", after-before)
	}
	if n := h.store.barrierCount() - barriers; n != 0 {
		t.Fatalf("20 refused bootstraps made %d read barriers, want none: the node has applied the bootstrap", n)
	}
}

// A node whose state lags the bootstrap (a follower) reads the leader's
// state before it answers, and refuses without proposing.
func TestBootstrapOnALaggingNodeReadsTheLeadersStateFirst(t *testing.T) {
	lagging := &fsmStore{f: fsm.New()}
	lagging.onBarrier = func() { // the leader's bootstrap reaches the node
		_, _ = lagging.Apply(context.Background(), BootstrapCommand(tokenWithSecret("bootstrap", pb.AclRole_ACL_ROLE_MANAGEMENT, nil, "s")))
	}
	svc := NewACLService(Deps{Store: &noProposals{lagging}, Tokens: lagging.f})
	_, err := svc.BootstrapAcl(testCtx(t), &pb.BootstrapAclRequest{})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "bootstrapped already") {
		t.Fatalf("bootstrap on a lagging node: %q", st.Message())
	}
	if lagging.barrierCount() != 1 {
		t.Fatalf("%d read barriers, want one", lagging.barrierCount())
	}
}

// noProposals is a store through which nothing may be proposed.
type noProposals struct{ *fsmStore }

func (noProposals) Apply(context.Context, *pb.Command) (*pb.CommandResult, error) {
	return nil, status.Error(codes.Internal, "proposed")
}

// On a node whose leader bootstraps from serve --acl-bootstrap-file, the
// call is refused before the cluster is bootstrapped too: a stranger must
// not win the race between start and bootstrap.
func TestBootstrapFromFileRefusesTheCall(t *testing.T) {
	store := &fsmStore{f: fsm.New()}
	svc := NewACLService(Deps{Store: store, Tokens: store.f, ACLBootstrapFromFile: true})
	_, err := svc.BootstrapAcl(testCtx(t), &pb.BootstrapAclRequest{})
	if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "--acl-bootstrap-file") {
		t.Fatalf("bootstrap on a node with a bootstrap file: %q, want it to name --acl-bootstrap-file", st.Message())
	}
	if store.f.ACLBootstrapped() || store.index != 0 {
		t.Fatalf("bootstrapped %v after %d entries; want nothing committed", store.f.ACLBootstrapped(), store.index)
	}
}

// workerRequest is a valid request for a worker token, changed by f.
func workerRequest(f func(*pb.CreateAclTokenRequest)) *pb.CreateAclTokenRequest {
	r := &pb.CreateAclTokenRequest{Name: "w", Role: pb.AclRole_ACL_ROLE_WORKER, Pools: []string{"batch"}}
	f(r)
	return r
}

// A worker token's pools and cap, and a token's expiry, come back as the
// leader stored them.
func TestCreateAclTokenBindsAndExpires(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := with(testCtx(t), h.bootstrap(t))
	resp, err := h.acl.CreateAclToken(ctx, workerRequest(func(r *pb.CreateAclTokenRequest) {
		r.Pools, r.MaxConcurrency, r.Ttl = []string{"batch", "reports"}, 8, durationpb.New(time.Hour)
	}))
	if err != nil {
		t.Fatal(err)
	}
	tok := resp.GetToken()
	if !slices.Equal(tok.GetPools(), []string{"batch", "reports"}) || tok.GetMaxConcurrency() != 8 ||
		!tok.GetExpiresAt().AsTime().Equal(testNow.Add(time.Hour)) || tok.GetSecretHash() != nil {
		t.Fatalf("created %v: want pools batch and reports, cap 8, expiring an hour after the leader's stamp, no hash", tok)
	}
}

// A worker session gets what its token binds; a management token any pool.
func TestWorkerSessionIsGrantedItsTokensBindings(t *testing.T) {
	hub := fakeWorkerHub{grants: make(chan remote.Grant, 1)}
	h := newACLHarnessWith(t, true, hub)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	created, err := h.acl.CreateAclToken(with(ctx, mgmt), &pb.CreateAclTokenRequest{
		Name: "payments-worker", Role: pb.AclRole_ACL_ROLE_WORKER, Pools: []string{"payments"}, MaxConcurrency: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	mgmtAccessor := h.accessorOf(t, mgmt, BootstrapTokenName)
	for _, tc := range []struct {
		secret string
		want   remote.Grant
	}{
		{created.GetSecret(), remote.Grant{Token: created.GetToken().GetAccessorId(), Pools: []string{"payments"}, MaxConcurrency: 4}},
		{mgmt, remote.Grant{Token: mgmtAccessor}},
	} {
		sctx, cancel := context.WithCancel(with(ctx, tc.secret))
		if _, err := h.worker.Connect(sctx); err != nil {
			t.Fatal(err)
		}
		got := <-hub.grants
		cancel()
		if got.Token != tc.want.Token || !slices.Equal(got.Pools, tc.want.Pools) || got.MaxConcurrency != tc.want.MaxConcurrency {
			t.Errorf("grant %+v, want %+v", got, tc.want)
		}
	}
}

// accessorOf is the accessor ID of the token named name.
func (h *aclHarness) accessorOf(t *testing.T, mgmt, name string) string {
	t.Helper()
	list, err := h.acl.ListAclTokens(with(testCtx(t), mgmt), &pb.ListAclTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range list.GetTokens() {
		if tok.GetName() == name {
			return tok.GetAccessorId()
		}
	}
	t.Fatalf("no token named %s", name)
	return ""
}

// revocationBound is how soon a stream must end once its token is gone.
const revocationBound = time.Second

// streamEnd opens a stream with open and returns a channel that delivers
// how it ended.
func streamEnd(t *testing.T, open func(context.Context) (func() error, error), ctx context.Context) <-chan error {
	t.Helper()
	recv, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		for {
			if err := recv(); err != nil {
				ended <- err
				return
			}
		}
	}()
	return ended
}

func (h *aclHarness) watch(ctx context.Context) (func() error, error) {
	stream, err := h.runs.WatchRuns(ctx, &pb.WatchRunsRequest{})
	if err != nil {
		return nil, err
	}
	// The watch sends its headers once it is in place; a refused one
	// sends none, and Recv says why.
	md, err := stream.Header()
	if err == nil && md == nil {
		_, err = stream.Recv()
	}
	if err != nil {
		return nil, err
	}
	return func() error { _, err := stream.Recv(); return err }, nil
}

// wantEnded waits up to revocationBound for a stream to end with
// Unauthenticated saying why.
func wantEnded(t *testing.T, what string, ended <-chan error, why string) {
	t.Helper()
	select {
	case err := <-ended:
		if st := status.Convert(err); st.Code() != codes.Unauthenticated || !strings.Contains(st.Message(), why) {
			t.Fatalf("%s ended with %v, want Unauthenticated saying %q", what, err, why)
		}
	case <-time.After(revocationBound):
		t.Fatalf("%s still open %s after its token stopped working", what, revocationBound)
	}
}

// Before, a token was checked once, when a stream opened: a run watch and
// a worker session outlived the token's deletion. Now every stream of the
// token ends within a second; another token's streams stay.
func TestDeletingATokenEndsItsStreams(t *testing.T) {
	hub := fakeWorkerHub{grants: make(chan remote.Grant, 2)}
	h := newACLHarnessWith(t, true, hub)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	read := h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil)
	worker := h.token(t, mgmt, "worker-1", pb.AclRole_ACL_ROLE_WORKER, nil)
	other := h.token(t, mgmt, "other-viewer", pb.AclRole_ACL_ROLE_READ, nil)

	watch := streamEnd(t, h.watch, with(ctx, read))
	otherWatch := streamEnd(t, h.watch, with(ctx, other))
	session := streamEnd(t, func(ctx context.Context) (func() error, error) {
		stream, err := h.worker.Connect(ctx)
		if err != nil {
			return nil, err
		}
		<-hub.grants // the session reached the hub
		return func() error { _, err := stream.Recv(); return err }, nil
	}, with(ctx, worker))

	for _, name := range []string{"viewer", "worker-1"} {
		if _, err := h.acl.DeleteAclToken(with(ctx, mgmt), &pb.DeleteAclTokenRequest{AccessorId: h.accessorOf(t, mgmt, name)}); err != nil {
			t.Fatal(err)
		}
	}
	wantEnded(t, "the run watch of the deleted read token", watch, "ACL token deleted")
	wantEnded(t, "the worker session of the deleted worker token", session, "ACL token deleted")
	select {
	case err := <-otherWatch:
		t.Fatalf("the watch of a token still live ended: %v", err)
	default:
	}
}

// An expired token is as unknown as a deleted one, at each call and to the
// streams it opened, judged by the answering node's clock.
func TestAnExpiredTokenIsUnknownAndEndsItsStreams(t *testing.T) {
	h := newACLHarness(t, true)
	h.store.now = time.Now // the Authorizer's clock: expiry is real time here
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	resp, err := h.acl.CreateAclToken(with(ctx, mgmt), &pb.CreateAclTokenRequest{
		Name: "temp", Role: pb.AclRole_ACL_ROLE_READ, Ttl: durationpb.New(time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	temp := resp.GetSecret()
	watch := streamEnd(t, h.watch, with(ctx, temp))
	if _, err := h.jobs.ListJobs(with(ctx, temp), &pb.ListJobsRequest{}); err != nil {
		t.Fatalf("the token before its expiry: %v", err)
	}
	until := time.Until(resp.GetToken().GetExpiresAt().AsTime())
	select {
	case err := <-watch:
		t.Fatalf("the watch ended %s before the token expired: %v", until, err)
	case <-time.After(until - 100*time.Millisecond):
	}
	wantEnded(t, "the run watch of the expired token", watch, "ACL token expired")
	_, err = h.jobs.ListJobs(with(ctx, temp), &pb.ListJobsRequest{})
	if st := wantCode(t, err, codes.Unauthenticated); st.Message() != "unknown or expired ACL token" {
		t.Fatalf("a call with the expired token: %q", st.Message())
	}
	_, err = h.watch(with(ctx, temp))
	wantCode(t, err, codes.Unauthenticated)
}
