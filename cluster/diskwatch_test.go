package cluster

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/raftcron/raftcron/internal/testutil"
)

const testStallTimeout = 300 * time.Millisecond

// disk fakes a node's disk: while stalled, every Raft write blocks.
type disk struct {
	mu   sync.Mutex // guards hold
	hold chan struct{}
}

func (d *disk) beforeWrite() {
	d.mu.Lock()
	hold := d.hold
	d.mu.Unlock()
	if hold != nil {
		<-hold
	}
}

func (d *disk) stall() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hold = make(chan struct{})
}

func (d *disk) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hold != nil {
		close(d.hold)
		d.hold = nil
	}
}

// stallableCluster is a 3-node cluster whose disks the test can stall.
func stallableCluster(t *testing.T) (*testCluster, map[string]*disk) {
	disks := map[string]*disk{}
	var mu sync.Mutex
	tc := newCluster(t, 3, func(c *Config) {
		d := &disk{}
		mu.Lock()
		disks[c.ID] = d
		mu.Unlock()
		c.DiskStallTimeout = testStallTimeout
		c.beforeDiskWrite = d.beforeWrite
	})
	t.Cleanup(func() {
		for _, d := range disks {
			d.release() // a node stops only once its writes return
		}
	})
	return tc, disks
}

// A leader whose Raft write does not return gives up: not ready, and
// DiskStalled closes with ErrDiskStalled, for the process to exit.
func TestStalledDiskOnTheLeaderGivesUp(t *testing.T) {
	tc, disks := stallableCluster(t)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "before", "@hourly")
	stalledAt := time.Now()
	disks[leader.id].stall()
	go func() { _, _ = leader.node.Apply(ctxTimeout(t, 30*time.Second), putCmd("stuck", "@daily")) }()

	select {
	case <-leader.node.DiskStalled():
	case <-time.After(10 * testStallTimeout):
		t.Fatalf("DiskStalled not closed %s after the leader's disk stalled", 10*testStallTimeout)
	}
	if took := time.Since(stalledAt); took < testStallTimeout {
		t.Errorf("gave up after %s, before the %s timeout", took, testStallTimeout)
	}
	if err := leader.node.DiskStallErr(); !errors.Is(err, ErrDiskStalled) {
		t.Errorf("DiskStallErr = %v, want ErrDiskStalled", err)
	}
	if leader.node.Ready() {
		t.Error("a leader with a stalled disk reports ready")
	}
	if age := diskWriteAge(t, leader.node); age < testStallTimeout.Seconds() {
		t.Errorf("raftcron_disk_write_age_seconds = %v during the stall, want at least %v", age, testStallTimeout.Seconds())
	}
	for _, f := range tc.followers(leader) {
		if f.node.DiskStallErr() != nil {
			t.Errorf("follower %s gave up too", f.id)
		}
	}
}

// A follower with a stalled disk reports not ready but stays; once its
// disk answers it is ready again. The cluster commits meanwhile.
func TestStalledDiskOnAFollowerOnlyMakesItNotReady(t *testing.T) {
	tc, disks := stallableCluster(t)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]
	disks[f.id].stall()
	put(t, leader.node, "while-stalled", "@hourly") // the other follower makes the quorum
	testutil.WaitFor(t, 10*testStallTimeout, f.id+" not ready", func() bool { return !f.node.Ready() })
	time.Sleep(2 * testStallTimeout) // stalled well past the timeout, it must not give up
	if f.node.DiskStallErr() != nil || leader.node.DiskStallErr() != nil {
		t.Fatalf("a stalled follower made a node give up: %v / %v", f.node.DiskStallErr(), leader.node.DiskStallErr())
	}
	disks[f.id].release()
	testutil.WaitFor(t, 10*time.Second, f.id+" ready again with the write", func() bool {
		return f.node.Ready() && f.fsm.mustGet("while-stalled") == "@hourly"
	})
	testutil.WaitFor(t, 5*time.Second, "no write in flight on "+f.id, func() bool {
		return diskWriteAge(t, f.node) < testStallTimeout.Seconds()
	})
}

func TestDiskStallTimeoutIsChecked(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		rule string
	}{
		{-time.Second, "-1s must not be negative"},
		{time.Millisecond, "1ms must be at least 100ms"},
		{minDiskStallTimeout - 1, "must be at least 100ms"},
	} {
		cfg := Config{ID: "n1", Addr: "127.0.0.1:7001", DataDir: t.TempDir(), DiskStallTimeout: tc.d}
		var ce *ConfigError
		err := cfg.Validate()
		if !errors.As(err, &ce) || ce.Field != FieldDiskStallTimeout || !strings.Contains(ce.Rule, tc.rule) || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("DiskStallTimeout %s: %v, want a ConfigError naming %s with %q", tc.d, err, FieldDiskStallTimeout, tc.rule)
		}
	}
	mux := listen(t, "127.0.0.1:0")
	defer mux.Close()
	n, err := New(Config{ID: "n1", DataDir: t.TempDir(), FSM: newKVFSM(), Logger: testLogger(), NoSync: true}, mux)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer n.Shutdown(t.Context())
	if n.disk.timeout != DefaultDiskStallTimeout {
		t.Errorf("unset: the disk watch times out after %s, want the default %s", n.disk.timeout, DefaultDiskStallTimeout)
	}
}

// diskWriteAge reads raftcron_disk_write_age_seconds of n.
func diskWriteAge(t *testing.T, n *Node) float64 {
	t.Helper()
	var m dto.Metric
	if err := n.Collectors()[0].(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// The watch sleeps while no write is in flight, and a write that stalls
// after such a sleep is still caught.
func TestDiskWatchSleepsUntilAWriteStarts(t *testing.T) {
	w := newDiskWatch(minDiskStallTimeout, testLogger(), nil)
	w.start(func() bool { return true })
	defer w.close()
	testutil.WaitFor(t, 5*time.Second, "the watch asleep with nothing in flight", func() bool { return w.sleeps.Load() == 1 })

	end := w.begin()
	select {
	case <-w.failed:
	case <-time.After(5 * time.Second):
		t.Fatal("a write stalled after the watch slept was not caught")
	}
	end()
	testutil.WaitFor(t, 5*time.Second, "the watch asleep again once the write returned", func() bool { return w.sleeps.Load() == 2 })
}
