package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/server"
)

// realNode is one raftcron node with ACLs on, serving the UI and the JSON
// API on its HTTP port; secret is its bootstrap token's.
type realNode struct {
	url, secret string
}

func startRealNode(t *testing.T) *realNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv, err := server.New(server.Config{
		ID: "n1", Addr: addr, Listener: ln, HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Peers: []cluster.Peer{{ID: "n1", Addr: addr}}, ACL: true, Version: "v0.0.0-test",
		HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond, LeaderLeaseTimeout: 250 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		_ = srv.Stop(ctx)
	})
	for !srv.Ready() {
		select {
		case <-ctx.Done():
			t.Fatal("the node was not ready in time")
		case <-time.After(50 * time.Millisecond):
		}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	boot, err := pb.NewAclServiceClient(conn).BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return &realNode{url: "http://" + srv.HTTPAddr(), secret: boot.GetSecret()}
}

// call is a JSON API call with the bootstrap token.
func (n *realNode) call(t *testing.T, method, path, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, n.url+path, bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+n.secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
}

// waitClusterVersion waits until /status reports the cluster version of
// this build: alerts wait for it.
func (n *realNode) waitClusterVersion(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, "cluster_version "+fmt.Sprint(fsm.CommandVersion), func() bool {
		resp, err := http.Get(n.url + "/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			ClusterVersion uint32 `json:"cluster_version"`
		}
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.ClusterVersion == fsm.CommandVersion
	})
}

// TestBrowserRealNode walks the operator's path on a real node with ACLs
// on: sign in, see a job fire with its tokens, pause it with a note,
// trigger it, watch a run another operator starts arrive live, cancel it
// while it hangs, and read all of it in the audit trail.
func TestBrowserRealNode(t *testing.T) {
	chromiumPath(t)
	done := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "done\n") }))
	defer done.Close()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	n := startRealNode(t)
	n.call(t, http.MethodPut, "/v1/jobs/billing", `{"schedule": "*/2 * * * * *", "timezone": "Europe/Berlin",
		"http": {"url": "`+done.URL+`/run", "timeout": "5s"}, "labels": {"team": "billing"}}`)
	n.call(t, http.MethodPut, "/v1/jobs/stuck", `{"schedule": "0 3 * * *", "http": {"url": "`+hang.URL+`/run", "timeout": "60s"}}`)

	ctx := newBrowser(t, desktop)
	signIn(t, ctx, n.url, n.secret, "bootstrap")
	run(t, ctx, goTo("#/jobs"), waitText("table.jobs tbody", "succeeded"), waitText("table.jobs tbody", "#"))
	run(t, ctx, goTo("#/jobs?labels=team%3Dbilling"), waitText("table.jobs tbody", "billing"))
	if got := text(t, ctx, "table.jobs tbody"); strings.Contains(got, "stuck") {
		t.Errorf("the label filter team=billing shows the job stuck:\n%s", got)
	}
	run(t, ctx,
		goTo("#/jobs/billing"), waitText("table.ledger", "succeeded"),
		clickButton("Pause…"), chromedp.WaitVisible("#pause-note", chromedp.ByQuery),
		chromedp.SendKeys("#pause-note", "invoice fix"+kb.Enter, chromedp.ByQuery),
		waitText(".note", "Paused: invoice fix"),
		clickButton("Trigger once"),
		waitText(".toolbar .status", "Triggered run"),
		waitText("table.ledger", "manual"),
	)

	run(t, ctx, goTo("#/runs?job=stuck"), waitText("h1 .live", "live"))
	n.call(t, http.MethodPost, "/v1/jobs/stuck:trigger", `{}`)
	run(t, ctx,
		waitText("table.runs tbody", "dispatched"),
		chromedp.Click(`table.runs button.danger`, chromedp.ByQuery),
		clickButton("Cancel run"),
		waitText("table.runs tbody", "cancelled"),
	)

	run(t, ctx, goTo("#/audit"), waitText("table.audit tbody", "cancel"))
	audit := text(t, ctx, "table.audit tbody")
	for _, want := range []string{"pause", "invoice fix", "trigger", "cancel", "bootstrap"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit trail lacks %q:\n%s", want, audit)
		}
	}
}

// TestBrowserChains: a job that runs after another shows what it runs
// after and its last chained runs with their parents; the parent shows
// what runs after it and, in its ledger, the runs each of its runs fired;
// deleting it asks to do so anyway.
func TestBrowserChains(t *testing.T) {
	chromiumPath(t)
	done := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "done\n") }))
	defer done.Close()
	n := startRealNode(t)
	n.call(t, http.MethodPut, "/v1/jobs/export", `{"schedule": "*/2 * * * * *", "http": {"url": "`+done.URL+`/export", "timeout": "5s"}}`)
	n.call(t, http.MethodPut, "/v1/jobs/load", `{"after": [{"job": "export"}], "http": {"url": "`+done.URL+`/load", "timeout": "5s"}}`)

	ctx := newBrowser(t, desktop)
	signIn(t, ctx, n.url, n.secret, "bootstrap")
	run(t, ctx,
		goTo("#/jobs/load"), waitText("#job-title", "load"),
		waitText(".chain .parents", "export"),
		waitText("table.chained tbody", "succeeded"),
		waitText("table.ledger", "chained"),
	)
	if got := text(t, ctx, "section"); !strings.Contains(got, "No schedule: it fires after export.") {
		t.Errorf("the page of a job without a schedule says what it fires after; got\n%s", got)
	}
	if got := text(t, ctx, "table.chained tbody"); !strings.Contains(got, "export export-") || !strings.Contains(got, "#") {
		t.Errorf("a chained run lists its parent run with its token; got\n%s", got)
	}
	screenshot(t, ctx, desktop, "job-chained")
	run(t, ctx,
		goTo("#/jobs/export"), waitText("#job-title", "export"),
		waitText(".chain .children", "load"),
		// A parent run names the run it fired, with its outcome.
		waitText("table.ledger .downstream", "then load-"),
		waitText("table.ledger", "(succeeded)"),
		clickButton("Delete…"),
		waitText("dialog", "load runs after it"),
	)
}

// TestBrowserRecreatedJobShowsNoOldRuns: a job created again under a
// deleted job's name has an empty ledger on its page; the runs page still
// lists the deleted job's run, marked, for the management token.
func TestBrowserRecreatedJobShowsNoOldRuns(t *testing.T) {
	chromiumPath(t)
	done := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "done\n") }))
	defer done.Close()
	n := startRealNode(t)
	spec := `{"schedule": "0 3 * * *", "http": {"url": "` + done.URL + `/run", "timeout": "5s"}}`
	n.call(t, http.MethodPut, "/v1/jobs/report", spec)
	n.call(t, http.MethodPost, "/v1/jobs/report:trigger", `{}`)

	ctx := newBrowser(t, desktop)
	signIn(t, ctx, n.url, n.secret, "bootstrap")
	run(t, ctx, goTo("#/jobs/report"), waitText("table.ledger", "succeeded"))
	n.call(t, http.MethodDelete, "/v1/jobs/report", "")
	n.call(t, http.MethodPut, "/v1/jobs/report", spec)
	// Opened again, the job page lists the name's runs, which come back
	// marked.
	run(t, ctx, goTo("#/jobs"), waitText("table.jobs tbody", "report"))
	run(t, ctx, goTo("#/jobs/report"), waitText("table.ledger", "No runs yet"))
	run(t, ctx, goTo("#/runs"), waitText("table.runs tbody", "deleted job"))
}

// TestBrowserCalendars: the job page names a job's calendars and marks the
// next fires they skip, its missed-and-skipped table names the calendar of
// each skipped slot, and the calendars page lists the calendars and the
// freezes, each calendar with its entries and the jobs that use it.
func TestBrowserCalendars(t *testing.T) {
	chromiumPath(t)
	done := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "done\n") }))
	defer done.Close()
	n := startRealNode(t)
	// Every second is in the calendar: each slot is skipped, and so is
	// every next fire.
	n.call(t, http.MethodPut, "/v1/calendars/always", `{"description": "every day", "entries": [{"days": ["mon-sun"], "note": "all week"}]}`)
	n.call(t, http.MethodPost, "/v1/freezes", `{"name": "year-end", "from": "2099-12-20T00:00:00Z", "to": "2100-01-02T00:00:00Z", "note": "no deploys"}`)
	n.call(t, http.MethodPut, "/v1/jobs/report", `{"schedule": "*/2 * * * * *", "calendars": {"exclude": ["always"]},
		"http": {"url": "`+done.URL+`/run", "timeout": "5s"}}`)

	ctx := newBrowser(t, desktop)
	signIn(t, ctx, n.url, n.secret, "bootstrap")
	run(t, ctx, goTo("#/jobs/report"), waitText("p.calendars", "Not on always"),
		waitText("ol.fires", "skipped: calendar:always"), waitText("section", "skipped by calendar always"))
	run(t, ctx, goTo("#/calendars"), waitText("section", "year-end"), waitText("section", "no deploys"))
	if got := text(t, ctx, "section"); !strings.Contains(got, "always") || !strings.Contains(got, "every day") {
		t.Errorf("the calendars page lacks the calendar:\n%s", got)
	}
	run(t, ctx, goTo("#/calendars/always"), waitText("section", "all week"), waitText("dl.facts", "report"))
}

// TestBrowserAlerts: a job that fails pages a channel; the Alerts page
// lists the page delivered with the receiver's answer and the open
// episode, and the job's page shows its expectations and the same.
func TestBrowserAlerts(t *testing.T) {
	chromiumPath(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer failing.Close()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer receiver.Close()
	n := startRealNode(t)
	n.waitClusterVersion(t)
	n.call(t, http.MethodPut, "/v1/channels/ops", `{"channel": {"name": "ops", "webhook": {"url": "`+receiver.URL+`/hook"}}}`)
	n.call(t, http.MethodPut, "/v1/jobs/flaky", `{"schedule": "*/1 * * * * *", "http": {"url": "`+failing.URL+`", "timeout": "5s"},
		"expect": {"max_duration": "10m"}, "notify": [{"channel": "ops", "on": ["failed"]}]}`)

	ctx := newBrowser(t, desktop)
	signIn(t, ctx, n.url, n.secret, "bootstrap")
	run(t, ctx, goTo("#/alerts"), waitText("h1", "Alerts"))
	testutil.WaitFor(t, 20*time.Second, "the failed page delivered on the Alerts page", func() bool {
		run(t, ctx, clickButton("Refresh"))
		got := text(t, ctx, "table.alerts tbody")
		return strings.Contains(got, "delivered") && strings.Contains(got, "202 Accepted")
	})
	run(t, ctx, waitText("ul.episodes", "flaky"))
	run(t, ctx, goTo("#/jobs/flaky"), waitText("[aria-label=expectations]", "at most 10m0s"),
		waitText("ul.episodes", "failed"), waitText("table.alerts tbody", "failed"))
}
