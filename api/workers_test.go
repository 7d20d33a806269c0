package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/remote"
)

type fakeLeaderInfo struct {
	leading  bool
	id, addr string
}

func (f *fakeLeaderInfo) IsLeader() bool            { return f.leading }
func (f *fakeLeaderInfo) Leader() (id, addr string) { return f.id, f.addr }

// fakeWorkerHub ends every stream with err, after stepping down if asked;
// with grants, it first hands on the grant of each stream, and holds the
// stream open until it ends.
type fakeWorkerHub struct {
	err      error
	stepDown *fakeLeaderInfo
	grants   chan remote.Grant
}

// Poll waits for ctx to end when the hub hands on grants (a long poll
// held open), and ends with err otherwise.
func (h fakeWorkerHub) Poll(ctx context.Context, g remote.Grant, _ remote.PollRequest) ([]*pb.AttemptOffer, error) {
	if h.grants != nil {
		h.grants <- g
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return nil, h.err
}

func (h fakeWorkerHub) Heartbeat(remote.Grant, remote.Beat) (time.Time, time.Duration, error) {
	return time.Time{}, 0, h.err
}

func (h fakeWorkerHub) Complete(remote.Grant, *pb.WorkerOutcome) error { return h.err }

func (h fakeWorkerHub) Serve(stream pb.WorkerService_ConnectServer, g remote.Grant) error {
	if h.grants != nil {
		h.grants <- g
		<-stream.Context().Done()
	}
	if h.stepDown != nil {
		h.stepDown.leading = false
	}
	return h.err
}

// connectStream is a worker's stream that only has a context.
type connectStream struct {
	pb.WorkerService_ConnectServer
}

func (connectStream) Context() context.Context { return context.Background() }

func leaderAddressOf(t *testing.T, err error) string {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.Unavailable {
		t.Fatalf("code %v (%v), want Unavailable", st.Code(), err)
	}
	info, ok := cluster.NotLeaderInfo(err)
	if !ok {
		t.Fatalf("%v carries no NOT_LEADER ErrorInfo", err)
	}
	return info.GetMetadata()[cluster.MetadataLeaderAddress]
}

// A follower sends the worker to the leader; so does a leader that
// stepped down while the worker was connected.
func TestWorkerConnectPointsToTheLeader(t *testing.T) {
	follower := &fakeLeaderInfo{id: "n2", addr: "127.0.0.1:7002"}
	if got := leaderAddressOf(t, NewWorkerService(Deps{Workers: fakeWorkerHub{}, Leader: follower}).Connect(connectStream{})); got != "127.0.0.1:7002" {
		t.Fatalf("leader address %q, want 127.0.0.1:7002", got)
	}
	was := &fakeLeaderInfo{leading: true, id: "n3", addr: "127.0.0.1:7003"}
	err := NewWorkerService(Deps{Workers: fakeWorkerHub{err: errors.New("dropped"), stepDown: was}, Leader: was}).Connect(connectStream{})
	if got := leaderAddressOf(t, err); got != "127.0.0.1:7003" {
		t.Fatalf("leader address %q after stepping down, want 127.0.0.1:7003", got)
	}
	still := &fakeLeaderInfo{leading: true}
	bad := status.Error(codes.InvalidArgument, "hello.id: must match")
	if err := NewWorkerService(Deps{Workers: fakeWorkerHub{err: bad}, Leader: still}).Connect(connectStream{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("hub error %v, want it passed on", err)
	}
}
