package server

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The leader's Config.Now stamps what a client writes, whichever node took
// the request: a job created through a follower is created at the
// leader's time, not the follower's.
func TestTheLeadersNowStampsClientWrites(t *testing.T) {
	base := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	clockOf := map[string]time.Time{}
	servers := startCluster(t, 3, func(c *Config) {
		at := base.Add(time.Duration(len(clockOf)) * time.Hour)
		clockOf[c.ID] = at
		c.Now = func() time.Time { return at }
	})
	leader, followers := leaderOf(t, servers)
	conn := dialPlain(t, followers[0].Addr())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	spec := &pb.JobSpec{Name: "hourly", Schedule: "@hourly",
		Http: &pb.HttpTarget{Url: "http://127.0.0.1:1/", Timeout: durationpb.New(time.Second)}}
	if _, err := pb.NewJobServiceClient(conn).CreateJob(ctx, &pb.CreateJobRequest{Spec: spec}); err != nil {
		t.Fatalf("CreateJob through a follower: %v", err)
	}
	job, err := leader.FSM().Job("hourly")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := job.GetCreatedAt().AsTime(), clockOf[leader.Node().ID()]; !got.Equal(want) {
		t.Errorf("created_at %s; want the leader's time %s (the follower's is %s)",
			got, want, clockOf[followers[0].Node().ID()])
	}
}

// A node whose log holds a committed entry its build cannot apply (a kind
// from a newer release, as after a rollback) halts, and Err reports it, so
// that serve exits non-zero instead of running on without Raft.
func TestErrReportsTheNodesHalt(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := Config{
		ID: "n1", DataDir: dir, Addr: addr, HTTPAddr: "127.0.0.1:0",
		Peers:            []cluster.Peer{{ID: "n1", Addr: addr}},
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond, LeaderLeaseTimeout: 200 * time.Millisecond,
		Logger: testLogger(), NoSync: true,
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the node to lead", s.Ready)
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	appendNewerKind(t, dir)

	s, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.Err():
		if !errors.Is(err, cluster.ErrHalted) {
			t.Fatalf("Err: %v, want ErrHalted", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the node never reported its halt through Err")
	}
}

// appendNewerKind writes, into a stopped node's log, a command of a kind at
// a oneof field number this build does not know; the next leader's first
// entry commits it.
func appendNewerKind(t *testing.T, dir string) {
	t.Helper()
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	last, err := store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var prev raft.Log
	if err := store.GetLog(last, &prev); err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(&pb.Command{ProposedAtUnixNano: time.Now().UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	data = protowire.AppendTag(data, 99, protowire.BytesType)
	data = protowire.AppendBytes(data, protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "x"))
	if err := store.StoreLog(&raft.Log{Index: last + 1, Term: prev.Term, Type: raft.LogCommand, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// Limits out of range are refused, naming the field; zero takes the
// default.
func TestValidateRefusesLimitsOutOfRange(t *testing.T) {
	cfg := Config{ID: "n1", DataDir: t.TempDir(), Addr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:0",
		Limits: Limits{MaxJobs: -1, MaxConcurrentStreams: 1 << 40}}
	err := cfg.Validate()
	var fields []string
	for _, e := range flatten(err) {
		var ce *cluster.ConfigError
		if errors.As(e, &ce) && errors.Is(e, cluster.ErrInvalidConfig) {
			fields = append(fields, ce.Field)
		}
	}
	if len(fields) != 2 || fields[0] != FieldMaxJobs || fields[1] != FieldMaxConcurrentStreams {
		t.Fatalf("Validate: %v; want errors naming %s and %s", err, FieldMaxJobs, FieldMaxConcurrentStreams)
	}
	cfg.Limits = Limits{}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate with zero limits: %v", err)
	}
}

// flatten lists the errors that errors.Join put together, at any depth.
func flatten(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}
