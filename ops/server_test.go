package ops

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

type fakeNode struct {
	ready atomic.Bool
}

func (f *fakeNode) Status() *pb.NodeStatus {
	return &pb.NodeStatus{
		Id: "n1", Address: "127.0.0.1:7001", State: "leader",
		Leader: &pb.ServerRef{Id: "n1", Address: "127.0.0.1:7001"},
		Term:   3, CommitIndex: 42, AppliedIndex: 41, LastLogIndex: 42, CommandVersion: 4, ClusterVersion: 3,
		Servers: []*pb.Server{{Id: "n1", Address: "127.0.0.1:7001", Suffrage: "voter", Leader: true}},
	}
}
func (f *fakeNode) Ready() bool           { return f.ready.Load() }
func (f *fakeNode) IsLeader() bool        { return true }
func (f *fakeNode) LeaderChanges() uint64 { return 5 }

type fakeRegistry struct{}

func (fakeRegistry) FencingToken() uint64 { return 99 }
func (fakeRegistry) JobCount() int        { return 7 }
func (fakeRegistry) LastHour(time.Time) *pb.RunCounts {
	return &pb.RunCounts{Fires: 85, Failures: 2, Missed: 1}
}

func newTestServer(t *testing.T) (*fakeNode, *Server, *httptest.Server) {
	t.Helper()
	n := &fakeNode{}
	s, err := New(n, fakeRegistry{}, "v-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return n, s, hs
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestLivezAlwaysOK(t *testing.T) {
	t.Parallel()
	_, _, hs := newTestServer(t)
	if code, _ := get(t, hs.URL+"/livez"); code != http.StatusOK {
		t.Fatalf("/livez = %d, want 200", code)
	}
}

func TestReadyzFollowsNodeAndDraining(t *testing.T) {
	t.Parallel()
	n, s, hs := newTestServer(t)
	if code, _ := get(t, hs.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("not ready node: /readyz = %d, want 503", code)
	}
	n.ready.Store(true)
	if code, _ := get(t, hs.URL+"/readyz"); code != http.StatusOK {
		t.Fatalf("ready node: /readyz = %d, want 200", code)
	}
	s.SetDraining()
	code, body := get(t, hs.URL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Fatalf("draining node: /readyz = %d %q, want 503 draining", code, body)
	}
}

func TestStatusHasContractFields(t *testing.T) {
	t.Parallel()
	_, _, hs := newTestServer(t)
	code, body := get(t, hs.URL+"/status")
	if code != http.StatusOK {
		t.Fatalf("/status = %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("/status is not JSON: %v\n%s", err, body)
	}
	want := map[string]any{
		"id": "n1", "state": "leader", "term": 3.0, "commit_index": 42.0,
		"applied_index": 41.0, "fencing_token": 99.0, "command_version": 4.0, "cluster_version": 3.0,
	}
	for k, v := range want {
		if doc[k] != v {
			t.Errorf("/status %s = %v, want %v", k, doc[k], v)
		}
	}
	leader, _ := doc["leader"].(map[string]any)
	if leader["id"] != "n1" || leader["address"] != "127.0.0.1:7001" {
		t.Errorf("/status leader = %v", doc["leader"])
	}
	hour, _ := doc["last_hour"].(map[string]any)
	if hour["fires"] != 85.0 || hour["failures"] != 2.0 || hour["missed"] != 1.0 {
		t.Errorf("/status last_hour = %v, want the replicated counts", doc["last_hour"])
	}
}

// /status decodes into Status, the type every reader uses, and says what
// /readyz says.
func TestStatusDecodesIntoStatusAndFollowsReadiness(t *testing.T) {
	t.Parallel()
	n, s, hs := newTestServer(t)
	read := func() Status {
		t.Helper()
		_, body := get(t, hs.URL+"/status")
		var st Status
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("/status: %v\n%s", err, body)
		}
		return st
	}
	st := read()
	if st.Ready == nil || *st.Ready || st.FencingToken != 99 || len(st.Servers) != 1 || !st.Servers[0].Leader {
		t.Fatalf("/status of a node not ready: %+v", st)
	}
	n.ready.Store(true)
	if st := read(); st.Ready == nil || !*st.Ready {
		t.Fatalf("/status of a ready node: ready %v", st.Ready)
	}
	s.SetDraining()
	if st := read(); st.Ready == nil || *st.Ready {
		t.Fatalf("/status of a draining node: ready %v", st.Ready)
	}
}

func TestMetricsHaveRaftcronSeries(t *testing.T) {
	t.Parallel()
	_, _, hs := newTestServer(t)
	code, body := get(t, hs.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	for _, series := range []string{
		"raftcron_is_leader 1", "raftcron_leader_changes_total 5",
		"raftcron_fencing_token 99", "raftcron_jobs 7",
		`raftcron_build_info{version="v-test"} 1`, "go_goroutines",
	} {
		if !strings.Contains(body, series) {
			t.Errorf("/metrics lacks %q", series)
		}
	}
}

func TestPprofOnlyOnTheDebugHandler(t *testing.T) {
	_, _, hs := newTestServer(t)
	if code, _ := get(t, hs.URL+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("ops port /debug/pprof/ = %d, want 404", code)
	}
	debug := httptest.NewServer(DebugHandler())
	defer debug.Close()
	if code, _ := get(t, debug.URL+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("debug handler /debug/pprof/ = %d, want 200", code)
	}
}

// TestOpsHTTPServerBoundsEveryPhase: a client that stalls while sending or
// reading must not hold a connection for ever.
func TestOpsHTTPServerBoundsEveryPhase(t *testing.T) {
	t.Parallel()
	srv := HTTPServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Fatalf("timeouts header %s read %s write %s idle %s: want all set",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
}

func TestMetricsReadyFollowsReadyzAndTermFollowsRaft(t *testing.T) {
	t.Parallel()
	n, s, hs := newTestServer(t)
	_, body := get(t, hs.URL+"/metrics")
	for _, series := range []string{"raftcron_ready 0", "raftcron_raft_term 3"} {
		if !strings.Contains(body, series) {
			t.Errorf("/metrics lacks %q", series)
		}
	}
	n.ready.Store(true)
	if _, body = get(t, hs.URL+"/metrics"); !strings.Contains(body, "raftcron_ready 1") {
		t.Errorf("ready node: /metrics lacks raftcron_ready 1")
	}
	s.SetDraining()
	if _, body = get(t, hs.URL+"/metrics"); !strings.Contains(body, "raftcron_ready 0") {
		t.Errorf("draining node: /metrics lacks raftcron_ready 0")
	}
}
