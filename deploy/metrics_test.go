package deploy

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/server"
)

// metricRef finds metric names in PromQL: raftcron_* series and `up`.
var metricRef = regexp.MustCompile(`\b(raftcron_[A-Za-z0-9_]+|up)\b`)

// TestAlertsAndDashboardNameOnlyExportedMetrics scrapes a real one-node
// cluster that has fired, failed and missed runs, and fails if an alert or a
// dashboard query names a series the node does not export: a renamed metric
// would otherwise leave an alert that can never fire.
func TestAlertsAndDashboardNameOnlyExportedMetrics(t *testing.T) {
	exported := scrapeFiringNode(t)
	exported["up"] = true // Prometheus's own series for every target
	for file, exprs := range map[string][]string{
		"prometheus/alerts.yaml": alertExprs(t),
		"grafana/raftcron.json":  dashboardExprs(t),
	} {
		if len(exprs) == 0 {
			t.Fatalf("%s: no queries found", file)
		}
		for _, e := range exprs {
			for _, name := range metricRef.FindAllString(e, -1) {
				if !exported[name] {
					t.Errorf("%s: query %q names %s, which a node does not export", file, e, name)
				}
			}
		}
	}
}

func alertExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, line := range strings.Split(string(data), "\n") {
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "expr: "); ok {
			exprs = append(exprs, e)
		}
	}
	return exprs
}

func dashboardExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("grafana/raftcron.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("grafana/raftcron.json: %v", err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	return exprs
}

// scrapeFiringNode runs a one-node cluster with a job that succeeds, one
// that fails and one paused long enough to miss slots, and returns the
// metric names its /metrics exports (histogram and summary series by their
// full names: _bucket, _count, _sum).
func scrapeFiringNode(t *testing.T) map[string]bool {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv, err := server.New(server.Config{
		ID: "m1", DataDir: t.TempDir(), Listener: ln, Addr: addr, HTTPAddr: "127.0.0.1:0",
		Peers: []cluster.Peer{{ID: "m1", Addr: addr}}, NoSync: true, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	defer failing.Close()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	jobs := pb.NewJobServiceClient(conn)
	testutil.WaitFor(t, 30*time.Second, "the node to accept jobs", func() bool {
		_, err := jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: &pb.JobSpec{Name: "ok", Schedule: "* * * * * *", Http: &pb.HttpTarget{Url: ok.URL}}})
		return err == nil
	})
	for _, spec := range []*pb.JobSpec{
		{Name: "failing", Schedule: "* * * * * *", Http: &pb.HttpTarget{Url: failing.URL}},
		{Name: "paused", Schedule: "* * * * * *", Http: &pb.HttpTarget{Url: ok.URL}, Paused: true},
	} {
		if _, err := jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]bool{}
	testutil.WaitFor(t, 30*time.Second, "runs, failures and misses on /metrics", func() bool {
		names = scrapeNames(t, "http://"+srv.HTTPAddr()+"/metrics")
		return names["raftcron_runs_total"] && names["raftcron_runs_missed_total"] && names["raftcron_fire_lateness_seconds_bucket"]
	})
	return names
}

func scrapeNames(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	return names
}
