package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/ops"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func testLogger() *slog.Logger {
	if os.Getenv("RAFTCRON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startCluster starts n servers on ports bound beforehand, bootstrapped
// together, and stops them at cleanup; opts adjust each one's Config.
func startCluster(t *testing.T, n int, opts ...func(*Config)) []*Server {
	t.Helper()
	lns := make([]net.Listener, n)
	peers := make([]cluster.Peer, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		peers[i] = cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: ln.Addr().String()}
	}
	servers := make([]*Server, n)
	for i := range servers {
		cfg := Config{
			ID: peers[i].ID, DataDir: t.TempDir(), Listener: lns[i], HTTPAddr: "127.0.0.1:0", Peers: peers,
			HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond, LeaderLeaseTimeout: 200 * time.Millisecond,
			Logger: testLogger().With("node", peers[i].ID), Version: "test", NoSync: true,
		}
		for _, o := range opts {
			o(&cfg)
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatalf("New(%s): %v", peers[i].ID, err)
		}
		servers[i] = s
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
	}
	for _, s := range servers {
		if err := s.Start(t.Context()); err != nil {
			t.Fatalf("Start: %v", err)
		}
	}
	return servers
}

// dialPlain is a client connection to addr without TLS, closed when the
// test ends.
func dialPlain(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func leaderOf(t *testing.T, servers []*Server) (leader *Server, followers []*Server) {
	t.Helper()
	testutil.WaitFor(t, 15*time.Second, "a leader and every node ready", func() bool {
		leader, followers = nil, nil
		for _, s := range servers {
			if !s.Ready() {
				return false
			}
			if s.Node().IsLeader() {
				leader = s
			} else {
				followers = append(followers, s)
			}
		}
		return leader != nil
	})
	return leader, followers
}

func getStatus(t *testing.T, s *Server) ops.Status {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var st ops.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("/status: %v", err)
	}
	return st
}

// A node built by New serves what `raftcron serve` serves: the public gRPC
// API (a write through a follower reaches the leader), the ops port's
// /status, and a scheduler that the FSM tells about the new job.
func TestServersServeTheAPIAndTheOpsPort(t *testing.T) {
	servers := startCluster(t, 3)
	leader, followers := leaderOf(t, servers)

	conn := dialPlain(t, followers[0].Addr())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	spec := &pb.JobSpec{Name: "hourly", Schedule: "@hourly",
		Http: &pb.HttpTarget{Url: "http://127.0.0.1:1/", Timeout: durationpb.New(time.Second)}}
	if _, err := pb.NewJobServiceClient(conn).CreateJob(ctx, &pb.CreateJobRequest{Spec: spec}); err != nil {
		t.Fatalf("CreateJob through a follower: %v", err)
	}
	if _, err := leader.FSM().StoredJob("hourly"); err != nil {
		t.Errorf("the leader's FSM after the create: %v", err)
	}

	// Ready needs every committed entry applied: one may be in between
	// when the status is read, so the leader is given a moment to be ready.
	var st ops.Status
	testutil.WaitFor(t, 10*time.Second, "the leader's /status to report ready", func() bool {
		st = getStatus(t, leader)
		return st.Ready != nil && *st.Ready
	})
	if st.ID != leader.Node().ID() || st.State != "leader" || st.Leader.Address != leader.Addr() ||
		st.Ready == nil || !*st.Ready || len(st.Servers) != 3 {
		t.Errorf("leader's /status: %+v", st)
	}
	if st := getStatus(t, followers[0]); st.State != "follower" || st.Leader.ID != leader.Node().ID() {
		t.Errorf("follower's /status: %+v", st)
	}
}

// Stop hands leadership over, and the node reports not ready from the
// start of the stop.
func TestStopHandsLeadershipOver(t *testing.T) {
	servers := startCluster(t, 3)
	leader, followers := leaderOf(t, servers)
	if err := leader.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if leader.Ready() {
		t.Error("a stopped server reports ready")
	}
	testutil.WaitFor(t, 5*time.Second, "a follower to take over", func() bool {
		return followers[0].Node().IsLeader() || followers[1].Node().IsLeader()
	})
	if err := leader.Stop(t.Context()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := leader.Start(t.Context()); !errors.Is(err, ErrStarted) {
		t.Errorf("Start after Stop: %v, want ErrStarted", err)
	}
}

// Both ports are bound by New, before any Raft state is touched: a taken
// port fails at once, names its field, and leaves the data dir empty and
// the other port free.
func TestNewFailsFastOnATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	free := freeAddr(t)
	for _, tc := range []struct {
		field          string
		addr, httpAddr string
		other          string
	}{
		{cluster.FieldAddr, taken.Addr().String(), free, free},
		{FieldHTTPAddr, free, taken.Addr().String(), free},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		_, err := New(Config{ID: "n1", DataDir: dir, Addr: tc.addr, HTTPAddr: tc.httpAddr, Logger: testLogger()})
		var ce *cluster.ConfigError
		if !errors.Is(err, cluster.ErrAddrInUse) || !errors.As(err, &ce) || ce.Field != tc.field {
			t.Fatalf("New with %s taken: %v, want ErrAddrInUse naming %s", tc.field, err, tc.field)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("New with %s taken created %s", tc.field, dir)
		}
		ln, err := net.Listen("tcp", tc.other)
		if err != nil {
			t.Fatalf("the other port %s is still bound: %v", tc.other, err)
		}
		_ = ln.Close()
	}
}

// A configuration that breaks rules is refused whole by New, every rule
// named by its field, before anything is bound or created.
func TestNewRefusesABadConfigAndTouchesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	_, err := New(Config{ID: "N 1", DataDir: dir, Addr: addr, HTTPAddr: "nohost", AuditLimit: fsm.MaxAuditLimit + 1, Logger: testLogger()})
	if err == nil {
		t.Fatal("New accepted a bad config")
	}
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *cluster.ConfigError
		if errors.As(e, &ce) {
			fields = append(fields, ce.Field)
		}
	}
	if fmt.Sprint(fields) != fmt.Sprint([]string{cluster.FieldID, FieldHTTPAddr, FieldAuditLimit}) {
		t.Fatalf("New: %v; want errors naming ID, HTTPAddr and AuditLimit", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("refused config created %s", dir)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("refused config left %s bound: %v", addr, err)
	}
	_ = ln.Close()
	// Without an address there is nothing to bind (and no listener given).
	_, err = New(Config{ID: "n1", DataDir: dir, HTTPAddr: "127.0.0.1:0", Logger: testLogger()})
	var ce *cluster.ConfigError
	if !errors.As(err, &ce) || ce.Field != cluster.FieldAddr {
		t.Errorf("New without Addr: %v, want a ConfigError of Addr", err)
	}
}

// A server stopped before it started releases its ports and data dir.
func TestStopBeforeStartReleasesEverything(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{ID: "n1", DataDir: dir, Addr: freeAddr(t), HTTPAddr: freeAddr(t), Logger: testLogger(), NoSync: true}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	again, err := New(cfg)
	if err != nil {
		t.Fatalf("New on the released ports and data dir: %v", err)
	}
	_ = again.Stop(t.Context())
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}
