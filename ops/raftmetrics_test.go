package ops

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcron/raftcron/internal/testutil"
)

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) interface{}         { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, io.EOF }
func (nopFSM) Restore(io.ReadCloser) error         { return nil }

// TestMetricsIncludeRaftSeries guards the hashicorpmetrics build tag: without
// it raft reports to a different go-metrics global and /metrics silently has
// no raft series at all.
func TestMetricsIncludeRaftSeries(t *testing.T) {
	_, _, hs := newTestServer(t) // installs the go-metrics sink first

	conf := raft.DefaultConfig()
	conf.LocalID = "m1"
	conf.HeartbeatTimeout = 50 * time.Millisecond
	conf.ElectionTimeout = 50 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.LogOutput = io.Discard
	store := raft.NewInmemStore()
	addr, trans := raft.NewInmemTransport("")
	r, err := raft.NewRaft(conf, nopFSM{}, store, store, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown().Error() })
	err = r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "m1", Address: addr}}}).Error()
	if err != nil {
		t.Fatal(err)
	}

	// Each check applies an entry once Raft leads, so that it has something
	// to report.
	testutil.WaitFor(t, 10*time.Second, "raftcron_raft_* series on /metrics (is the hashicorpmetrics build tag set?)", func() bool {
		if r.State() == raft.Leader {
			_ = r.Apply([]byte("x"), time.Second).Error()
		}
		_, body := get(t, hs.URL+"/metrics")
		return strings.Contains(body, "raftcron_raft_")
	})
}
