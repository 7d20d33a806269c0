package alert

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestChannel sends a test notification (event "test", about no job, with
// a fresh id, committed nowhere) to the channel name and returns the
// receiver's answer. Only the leader sends: ErrNotLeader elsewhere.
func (a *Alerter) TestChannel(ctx context.Context, name string) (*pb.TestChannelResponse, error) {
	if a.current() == nil {
		return nil, ErrNotLeader
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	al := &pb.Alert{
		Id: "test-" + hex.EncodeToString(b[:]), Event: "test", Channel: name, Episode: "test-" + hex.EncodeToString(b[:]),
		AtUnixNano: a.cfg.Now().UnixNano(), Reason: "raftcron channel test " + name,
	}
	res := a.sendOne(ctx, al, 1)
	return &pb.TestChannelResponse{Ok: res.OK, Status: int32(res.Status), Answer: res.Answer, Id: al.GetId()}, nil
}
