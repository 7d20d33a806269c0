package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// kvFSM is a tiny FSM for these tests: job name → schedule.
type kvFSM struct {
	mu sync.Mutex // guards kv, at and applied
	kv map[string]string
	// at is the proposed_at of each name's last put.
	at map[string]int64
	// applied counts the entries Apply saw.
	applied int
	// puts lists each name's schedules in the order applied.
	puts map[string][]string
}

func newKVFSM() *kvFSM {
	return &kvFSM{kv: make(map[string]string), at: make(map[string]int64), puts: make(map[string][]string)}
}

func (f *kvFSM) Apply(l *raft.Log) any {
	var cmd pb.Command
	if err := proto.Unmarshal(l.Data, &cmd); err != nil {
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_MALFORMED, Message: err.Error()}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied++
	switch k := cmd.GetKind().(type) {
	case *pb.Command_PutJob:
		name := k.PutJob.GetSpec().GetName()
		if name == "" {
			return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_MALFORMED}
		}
		_, existed := f.kv[name]
		f.kv[name] = k.PutJob.GetSpec().GetSchedule()
		f.at[name] = cmd.GetProposedAtUnixNano()
		f.puts[name] = append(f.puts[name], k.PutJob.GetSpec().GetSchedule())
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK, Changed: true, Created: !existed}
	case *pb.Command_DeleteJob:
		if _, ok := f.kv[k.DeleteJob.GetName()]; !ok {
			return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_NOT_FOUND}
		}
		delete(f.kv, k.DeleteJob.GetName())
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK, Changed: true}
	default:
		return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_MALFORMED}
	}
}

func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(map[string]string, len(f.kv))
	for k, v := range f.kv {
		c[k] = v
	}
	return kvSnapshot(c), nil
}

func (f *kvFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	kv := make(map[string]string)
	if err := json.NewDecoder(rc).Decode(&kv); err != nil {
		return err
	}
	f.mu.Lock()
	f.kv = kv
	f.mu.Unlock()
	return nil
}

func (f *kvFSM) get(name string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.kv[name]
	return v, ok
}

// proposedAt is the proposed_at of name's last put.
func (f *kvFSM) proposedAt(name string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at[name]
}

// history is every schedule put under name, in the order applied.
func (f *kvFSM) history(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.puts[name])
}

// entries is how many entries Apply saw.
func (f *kvFSM) entries() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

func (f *kvFSM) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.kv)
}

type kvSnapshot map[string]string

func (s kvSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(map[string]string(s)); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s kvSnapshot) Release() {}

func putCmd(name, schedule string) *pb.Command {
	return &pb.Command{
		ProposedAtUnixNano: time.Now().UnixNano(),
		Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{
			Spec: &pb.JobSpec{Name: name, Schedule: schedule},
			Mode: pb.PutMode_PUT_MODE_UPSERT,
		}},
	}
}

// Timings short enough for fast tests yet stable under -race on 2 cores.
const (
	testHeartbeat = 300 * time.Millisecond
	testElection  = 300 * time.Millisecond
	testLease     = 300 * time.Millisecond
)

func testLogger() *slog.Logger {
	if os.Getenv("RAFTCRON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// leadership records OnLeadershipChange calls.
type leadership struct {
	mu    sync.Mutex // guards calls
	calls []bool
}

func (l *leadership) record(v bool) {
	l.mu.Lock()
	l.calls = append(l.calls, v)
	l.mu.Unlock()
}

func (l *leadership) snapshot() []bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bool(nil), l.calls...)
}

type testNode struct {
	tb     testing.TB
	id     string
	addr   string
	dir    string
	fsm    *kvFSM
	mux    *Mux
	srv    *grpc.Server
	node   *Node
	leader *leadership

	stopOnce sync.Once
	stopped  bool
}

// nodeOpts tweaks a node's Config before New.
type nodeOpts func(*Config)

func fastTimings(c *Config) {
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = testHeartbeat, testElection, testLease
}

func listen(tb testing.TB, addr string) *Mux {
	tb.Helper()
	m, err := Listen(addr)
	if err != nil {
		tb.Fatalf("Listen(%s): %v", addr, err)
	}
	return m
}

// startNode starts a node on mux with its own gRPC server on the mux's
// gRPC route; it is stopped at cleanup.
func startNode(tb testing.TB, id, dir string, mux *Mux, opts ...nodeOpts) *testNode {
	tb.Helper()
	tn := &testNode{tb: tb, id: id, addr: mux.Addr().String(), dir: dir, fsm: newKVFSM(), mux: mux, leader: &leadership{}}
	cfg := Config{
		ID:                 id,
		Addr:               tn.addr,
		DataDir:            dir,
		FSM:                tn.fsm,
		Logger:             testLogger(),
		OnLeadershipChange: tn.leader.record,
		NoSync:             true,
	}
	fastTimings(&cfg)
	for _, o := range opts {
		o(&cfg)
	}
	n, err := New(cfg, mux)
	if err != nil {
		mux.Close()
		tb.Fatalf("New(%s): %v", id, err)
	}
	if err := n.Start(context.Background()); err != nil {
		_ = n.Shutdown(context.Background())
		mux.Close()
		tb.Fatalf("Start(%s): %v", id, err)
	}
	tn.node = n
	tn.srv = grpc.NewServer(mux.GRPCServerOptions()...)
	RegisterInternal(tn.srv, n)
	// A stand-in for the public API, which any client may call.
	healthpb.RegisterHealthServer(tn.srv, health.NewServer())
	go tn.srv.Serve(mux.GRPCListener())
	tb.Cleanup(tn.stop)
	return tn
}

// stop shuts the node down gracefully (leadership transfer included).
func (tn *testNode) stop() {
	tn.stopOnce.Do(func() {
		tn.stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tn.node.Shutdown(ctx); err != nil {
			tn.tb.Errorf("Shutdown(%s): %v", tn.id, err)
		}
		tn.srv.Stop()
		tn.mux.Close()
	})
}

// crash stops Raft without a leadership transfer, as a killed process
// would, then releases everything.
func (tn *testNode) crash() {
	if err := tn.node.raft.Shutdown().Error(); err != nil {
		tn.tb.Errorf("raft shutdown of %s: %v", tn.id, err)
	}
	tn.stop()
}

type testCluster struct {
	tb    testing.TB
	nodes []*testNode
}

// newCluster starts n bootstrapped nodes n1..nN on loopback.
func newCluster(tb testing.TB, n int, opts ...nodeOpts) *testCluster {
	tb.Helper()
	muxes := make([]*Mux, n)
	host := testutil.LoopbackHost() // a restart binds its port again
	for i := range muxes {
		muxes[i] = listen(tb, host+":0")
	}
	return clusterOn(tb, muxes, opts...)
}

// clusterOn starts nodes n1..nN bootstrapped together, one on each mux.
func clusterOn(tb testing.TB, muxes []*Mux, opts ...nodeOpts) *testCluster {
	tb.Helper()
	peers := make([]Peer, len(muxes))
	for i, m := range muxes {
		peers[i] = Peer{ID: fmt.Sprintf("n%d", i+1), Addr: m.Addr().String()}
	}
	tc := &testCluster{tb: tb}
	withPeers := func(c *Config) { c.Peers = peers }
	for i, m := range muxes {
		tc.nodes = append(tc.nodes, startNode(tb, peers[i].ID, tb.TempDir(), m, append([]nodeOpts{withPeers}, opts...)...))
	}
	return tc
}

func (tc *testCluster) running() []*testNode {
	var out []*testNode
	for _, tn := range tc.nodes {
		if !tn.stopped {
			out = append(out, tn)
		}
	}
	return out
}

// waitLeader waits until exactly one running node leads and every running
// node names it.
func (tc *testCluster) waitLeader(timeout time.Duration) *testNode {
	tc.tb.Helper()
	var leader *testNode
	testutil.WaitFor(tc.tb, timeout, "a leader every running node agrees on", func() bool {
		leader = nil
		for _, tn := range tc.running() {
			if tn.node.raft.State() == raft.Leader {
				if leader != nil {
					return false
				}
				leader = tn
			}
		}
		if leader == nil {
			return false
		}
		for _, tn := range tc.running() {
			if id, _ := tn.node.Leader(); id != leader.id {
				return false
			}
		}
		return true
	})
	return leader
}

func (tc *testCluster) followers(leader *testNode) []*testNode {
	var out []*testNode
	for _, tn := range tc.running() {
		if tn != leader {
			out = append(out, tn)
		}
	}
	return out
}

func (tc *testCluster) byID(id string) *testNode {
	for _, tn := range tc.nodes {
		if tn.id == id {
			return tn
		}
	}
	tc.tb.Fatalf("no node %s", id)
	return nil
}

// put writes through n like a client would: a transient lack of leader
// (an election under a loaded CPU) is retried until the deadline, and a
// write whose outcome that election left unknown is read back, and made
// again only if it is not there.
func put(tb testing.TB, n *Node, name, schedule string) *pb.CommandResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		res, err := n.Apply(ctx, putCmd(name, schedule))
		if kv, ok := n.cfg.FSM.(*kvFSM); ok && errors.Is(err, ErrIndeterminate) && ctx.Err() == nil {
			tb.Logf("put %s on %s: %v; reading it back", name, n.cfg.ID, err)
			readBarrier(tb, n)
			if kv.mustGet(name) == schedule {
				return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK}
			}
			continue
		}
		if errors.Is(err, ErrNoLeader) && ctx.Err() == nil {
			tb.Logf("put %s on %s: %v; retrying", name, n.cfg.ID, err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			tb.Fatalf("Apply(put %s) on %s: %v", name, n.cfg.ID, err)
		}
		if res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			tb.Fatalf("Apply(put %s) on %s: code %v", name, n.cfg.ID, res.GetCode())
		}
		return res
	}
}

// readBarrier retries a transient lack of leader, as put does.
func readBarrier(tb testing.TB, n *Node) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		err := n.ReadBarrier(ctx)
		if errors.Is(err, ErrNoLeader) && ctx.Err() == nil {
			tb.Logf("ReadBarrier on %s: %v; retrying", n.cfg.ID, err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			tb.Fatalf("ReadBarrier on %s: %v", n.cfg.ID, err)
		}
		return
	}
}

func ctxTimeout(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// mustGet is get for a key a test expects; a missing key reads as "".
func (f *kvFSM) mustGet(name string) string {
	v, _ := f.get(name)
	return v
}
