package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/internal/syncbuf"
	"github.com/raftcron/raftcron/internal/testutil"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A follower refuses leader-only requests with NOT_LEADER naming the
// leader, instead of forwarding them a second hop.
func TestInternalServiceRefusesOnFollower(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]
	srv := &internalServer{n: f.node}
	ctx := ctxTimeout(t, 5*time.Second)

	calls := map[string]func() error{
		"Apply": func() error {
			_, err := srv.Apply(ctx, &pb.ApplyRequest{Command: []byte{}})
			return err
		},
		"ReadIndex": func() error { _, err := srv.ReadIndex(ctx, &pb.ReadIndexRequest{}); return err },
		"AddVoter": func() error {
			_, err := srv.AddVoter(ctx, &pb.AddVoterRequest{Id: "n9", Address: "127.0.0.1:1"})
			return err
		},
		"RemoveServer": func() error { _, err := srv.RemoveServer(ctx, &pb.RemoveServerRequest{Id: "n3"}); return err },
		"TransferLeadership": func() error {
			_, err := srv.TransferLeadership(ctx, &pb.InternalServiceTransferLeadershipRequest{})
			return err
		},
	}
	for name, call := range calls {
		st := status.Convert(call())
		info := errorInfo(st)
		if st.Code() != codes.Unavailable || info == nil || info.GetReason() != "NOT_LEADER" || info.GetDomain() != "raftcron.io" {
			t.Errorf("%s on follower: %v (details %v), want Unavailable with ErrorInfo NOT_LEADER/raftcron.io", name, st.Err(), st.Details())
			continue
		}
		if info.GetMetadata()["leader_id"] != leader.id || info.GetMetadata()["leader_address"] != leader.addr {
			t.Errorf("%s on follower: metadata %v, want leader %s at %s", name, info.GetMetadata(), leader.id, leader.addr)
		}
	}
	if leader.fsm.len() != 0 {
		t.Error("a refused Apply reached the FSM")
	}

	// The leader itself answers ReadIndex with an index it has committed.
	resp, err := (&internalServer{n: leader.node}).ReadIndex(ctx, &pb.ReadIndexRequest{})
	if err != nil || resp.GetIndex() == 0 || resp.GetIndex() > leader.node.raft.CommitIndex() {
		t.Errorf("ReadIndex on leader: %v, %v", resp, err)
	}
}

func TestRaftLogsReachSlog(t *testing.T) {
	var buf syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mux := listen(t, "127.0.0.1:0")
	tn := startNode(t, "solo", t.TempDir(), mux, func(c *Config) {
		c.Logger = logger
		c.Peers = []Peer{{ID: "solo", Addr: mux.Addr().String()}}
	})
	testutil.WaitFor(t, 10*time.Second, "single node to lead", tn.node.IsLeader)
	testutil.WaitFor(t, 5*time.Second, "raft's leader message in slog", func() bool {
		for _, line := range strings.Split(buf.String(), "\n") {
			if strings.Contains(line, "entering leader state") && strings.Contains(line, "logger=raft") && strings.Contains(line, "level=INFO") {
				return true
			}
		}
		return false
	})

	h := newHCLog(logger, "raft").Named("sub").With("k", "v")
	if h.Name() != "raft.sub" || !h.IsDebug() {
		t.Errorf("Named/With: name %q, debug %v", h.Name(), h.IsDebug())
	}
	h.Warn("adapter check", "x", 1)
	h.StandardLogger(nil).Print("std line")
	h.Info("formatted", "v", hclog.Fmt("%d-%s", 7, "x"))
	out := buf.String()
	if !strings.Contains(out, `level=WARN msg="adapter check" logger=raft.sub k=v x=1`) {
		t.Errorf("adapter line missing or malformed in:\n%s", out)
	}
	if !strings.Contains(out, `msg=formatted logger=raft.sub k=v v=7-x`) {
		t.Errorf("hclog.Fmt value not rendered in:\n%s", out)
	}
	if !strings.Contains(out, `msg="std line" logger=raft.sub k=v`) {
		t.Errorf("standard logger line missing in:\n%s", out)
	}
}

// Errors crossing the forwarding hop keep their meaning.
func TestErrorsSurviveForwarding(t *testing.T) {
	n := lonelyNode(t).node
	ref := &pb.ServerRef{Id: "n2", Address: "127.0.0.1:7002"}
	for _, tc := range []struct {
		local error
		want  error
	}{
		{ErrNotLeader, ErrNoLeader},
		{n.noLeader(nil), ErrNoLeader},
		{ErrShutdown, ErrNoLeader},
		{fmt.Errorf("apply: %w: %w", ErrIndeterminate, raft.ErrLeadershipLost), ErrIndeterminate},
		{context.DeadlineExceeded, context.DeadlineExceeded},
		{context.Canceled, context.Canceled},
		{fmt.Errorf("remove server %q: %w", "x", ErrNotFound), ErrNotFound},
		{fmt.Errorf("add voter: %w", ErrServerExists), ErrServerExists},
		{invalidf("add voter: ID required"), ErrInvalidConfig},
	} {
		got := forwardError(ref, n.statusError(tc.local))
		if !errors.Is(got, tc.want) {
			t.Errorf("%v after forwarding: %v, want it to match %v", tc.local, got, tc.want)
		}
	}
	// An unreachable leader is reported as no leader, naming it.
	var nl *NoLeaderError
	err := forwardError(ref, status.Error(codes.Unavailable, "connection refused"))
	if !errors.As(err, &nl) || nl.LeaderID != "n2" || nl.LeaderAddr != "127.0.0.1:7002" {
		t.Errorf("unreachable leader: %v, want NoLeaderError naming n2", err)
	}
	// Anything else keeps its gRPC status.
	err = forwardError(ref, status.Error(codes.Internal, "boom"))
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "n2 at 127.0.0.1:7002") {
		t.Errorf("internal error: %v", err)
	}
}
