package api

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/policy"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// fsmStore commits commands straight into a real FSM, as a one-node
// cluster would, stamped with now (testNow if nil) as the leader stamps
// them. Its barrier runs onBarrier first, so a test can make a token
// "arrive" the way a follower catches up.
type fsmStore struct {
	f   *fsm.FSM
	now func() time.Time

	mu        sync.Mutex // guards everything below
	index     uint64
	barriers  int
	onBarrier func()
	entries   [][]byte // every command applied, as the log holds it
}

func (s *fsmStore) Apply(_ context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	if cmd.GetProposedAtUnixNano() == 0 {
		cmd.ProposedAtUnixNano = testNow.UnixNano()
		if s.now != nil {
			cmd.ProposedAtUnixNano = s.now().UnixNano()
		}
	}
	data, err := proto.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.index++
	idx := s.index
	s.entries = append(s.entries, data)
	s.mu.Unlock()
	return s.f.Apply(&raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data}).(*pb.CommandResult), nil
}

func (s *fsmStore) ReadBarrier(context.Context) error {
	s.mu.Lock()
	s.barriers++
	hook := s.onBarrier
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return nil
}

func (s *fsmStore) barrierCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.barriers
}

// fsmTriggerer commits a manual fire through the store, as the leader's
// scheduler would (without dispatching it).
type fsmTriggerer struct{ store *fsmStore }

func (t fsmTriggerer) Trigger(ctx context.Context, run *pb.Fire) (*pb.FireResult, error) {
	j, err := t.store.f.Job(run.GetJob())
	if err != nil {
		return &pb.FireResult{Reason: fsm.ReasonGone}, nil
	}
	run.Generation, run.Kind = j.GetGeneration(), pb.FireKind_FIRE_KIND_MANUAL
	res, err := t.store.Apply(ctx, &pb.Command{ProposedAtUnixNano: testNow.UnixNano(), Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
		LeaderId: "n1", Term: 1, Fires: []*pb.Fire{run},
	}}})
	if err != nil {
		return nil, err
	}
	return res.GetFires()[0], nil
}

// aclHarness is a gRPC server with the Authorizer in front of every
// service, all backed by one real FSM.
type aclHarness struct {
	store    *fsmStore
	hub      *RunHub
	conn     *grpc.ClientConn
	jobs     pb.JobServiceClient
	runs     pb.RunServiceClient
	fence    pb.FenceServiceClient
	admin    pb.ClusterServiceClient
	acl      pb.AclServiceClient
	worker   pb.WorkerServiceClient
	audit    pb.AuditServiceClient
	snap     pb.SnapshotServiceClient
	secrets  pb.SecretServiceClient
	cals     pb.CalendarServiceClient
	channels pb.ChannelServiceClient
	alerts   pb.AlertServiceClient
	chains   pb.ChainServiceClient
	frz      pb.FreezeServiceClient
	health   healthpb.HealthClient
	// snapDst is the state restores go into (the live state is store's).
	snapDst *fsm.FSM
}

// errWorkerServed is how the harness's worker hub ends every stream: a
// call that gets it was let through.
var errWorkerServed = status.Error(codes.FailedPrecondition, "reached the worker hub")

func newACLHarness(t *testing.T, enabled bool) *aclHarness {
	t.Helper()
	return newACLHarnessWith(t, enabled, fakeWorkerHub{err: errWorkerServed})
}

// harnessObservers is what a node's FSM tells: the run hub of runs, the
// Authorizer of revoked tokens.
type harnessObservers struct {
	hub  *RunHub
	auth *Authorizer
}

func (o harnessObservers) JobsChanged(fsm.Origin, []string) {}
func (o harnessObservers) RunsChanged(from fsm.Origin, runs []*pb.Run) {
	o.hub.RunsChanged(from, runs)
}
func (o harnessObservers) TokensRevoked(from fsm.Origin) { o.auth.TokensRevoked(from) }

// newACLHarnessWith serves remote workers with workers.
func newACLHarnessWith(t *testing.T, enabled bool, workers WorkerHub) *aclHarness {
	t.Helper()
	state := fsm.New()
	h := &aclHarness{store: &fsmStore{f: state}, hub: NewRunHub(), snapDst: fsm.New()}
	// The rules of this build, as a cluster of it applies them once its
	// first leader raised the cluster version.
	if _, err := h.store.Apply(context.Background(), fsm.SetClusterVersion(fsm.CommandVersion)); err != nil {
		t.Fatal(err)
	}
	auth := NewAuthorizer(AuthConfig{Enabled: enabled, Tokens: state, Barrier: h.store})
	state.SetObserver(harnessObservers{hub: h.hub, auth: auth})
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(auth.Unary()), grpc.ChainStreamInterceptor(auth.Stream()))
	now := func() time.Time { return testNow }
	sw := NewAuditSwitch(h.store, state, DefaultAuditLimit, nil, now)
	Register(s, NewServices(Deps{
		Store: h.store, Registry: state, Ledger: state, Tokens: state, AuditLog: state, Calendars: state,
		ClusterVersion: state.ClusterVersion,
		Cluster:        &fakeCluster{},
		Snapshots:      &snapNode{leader: true, src: state, dst: h.snapDst}, ScratchDir: t.TempDir(), Live: state,
		Workers: workers, Leader: &fakeLeaderInfo{leading: true},
		Hub: h.hub, Triggerer: fsmTriggerer{h.store}, Audit: sw, Now: now,
		Secrets: state, SecretKeys: testKeys(t, 1), Chains: state,
		// A node's own exec policy, as serve builds it with no flags:
		// no exec jobs, and the default refusals for env names.
		Exec:   mustNoExec(t),
		Alerts: state, ChannelTester: fakeTester{},
	}))

	lis := bufconn.Listen(1 << 20)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-served
	})
	h.conn = conn
	h.jobs = pb.NewJobServiceClient(conn)
	h.runs = pb.NewRunServiceClient(conn)
	h.fence = pb.NewFenceServiceClient(conn)
	h.admin = pb.NewClusterServiceClient(conn)
	h.acl = pb.NewAclServiceClient(conn)
	h.worker = pb.NewWorkerServiceClient(conn)
	h.audit = pb.NewAuditServiceClient(conn)
	h.snap = pb.NewSnapshotServiceClient(conn)
	h.secrets = pb.NewSecretServiceClient(conn)
	h.cals = pb.NewCalendarServiceClient(conn)
	h.frz = pb.NewFreezeServiceClient(conn)
	h.channels = pb.NewChannelServiceClient(conn)
	h.alerts = pb.NewAlertServiceClient(conn)
	h.chains = pb.NewChainServiceClient(conn)
	h.health = healthpb.NewHealthClient(conn)
	return h
}

// saveSnapshot reads a whole SaveSnapshot stream and returns how it ended.
func (h *aclHarness) saveSnapshot(ctx context.Context) error {
	stream, err := h.snap.SaveSnapshot(ctx, &pb.SaveSnapshotRequest{})
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// with is ctx carrying secret as the call's token.
func with(ctx context.Context, secret string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, AuthorizationKey, "Bearer "+secret)
}

// bootstrap creates the management token and returns its secret.
func (h *aclHarness) bootstrap(t *testing.T) string {
	t.Helper()
	resp, err := h.acl.BootstrapAcl(testCtx(t), &pb.BootstrapAclRequest{})
	if err != nil {
		t.Fatalf("BootstrapAcl: %v", err)
	}
	return resp.GetSecret()
}

// token creates a token with the management secret and returns its
// secret. A worker token is bound to the pool batch.
func (h *aclHarness) token(t *testing.T, mgmt, name string, role pb.AclRole, selector map[string]string) string {
	t.Helper()
	req := &pb.CreateAclTokenRequest{Name: name, Role: role, Selector: selector}
	if role == pb.AclRole_ACL_ROLE_WORKER {
		req.Pools = []string{"batch"}
	}
	resp, err := h.acl.CreateAclToken(with(testCtx(t), mgmt), req)
	if err != nil {
		t.Fatalf("CreateAclToken %s: %v", name, err)
	}
	return resp.GetSecret()
}

// labelled is a valid spec with labels.
func labelled(name string, labels map[string]string) *pb.JobSpec {
	s := validSpec(name)
	s.Labels = labels
	return s
}

// mustNoExec is the exec policy of a node started without --exec-allow.
func mustNoExec(t *testing.T) *policy.Exec {
	t.Helper()
	e, err := policy.NewExec(nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
