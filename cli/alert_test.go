package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
)

// TestCLIAlerts runs one node: a channel file applied, listed, shown in
// its file form (which applies back unchanged) and tested; a notify rule
// by selector; a job that fails pages the receiver, and alert list shows
// the page and its delivery.
func TestCLIAlerts(t *testing.T) {
	var hits atomic.Int32
	var lastID atomic.Value
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		lastID.Store(r.Header.Get("X-Raftcron-Notification-Id"))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer target.Close()

	dir := t.TempDir()
	c := startCluster(t, 1)
	node := c.Nodes()[0]
	cli := func(args ...string) cliResult { return cliOn(t, node, "", args...) }
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	chans := file("channels.yaml", "- name: ops\n  webhook: {url: "+receiver.URL+"/alerts, headers: {X-Team: ops}}\n  labels: {team: ops}\n"+
		"- name: pd\n  pagerduty: {routing_key: key-1}\n")
	r := expectOK(t, cli("channel", "apply", "-f", chans))
	if !strings.Contains(r.Stdout, "channel ops created") || !strings.Contains(r.Stdout, "channel pd created") {
		t.Fatalf("channel apply: %s", r)
	}
	expectFailure(t, cli("channel", "apply", "-f", file("bad.yaml", "name: x\nwebhook: {url: ftp://x}\n")), "webhook.url")
	r = expectOK(t, cli("channel", "list"))
	if !strings.Contains(r.Stdout, "ops") || !strings.Contains(r.Stdout, "pagerduty") {
		t.Fatalf("channel list: %s", r)
	}
	got := expectOK(t, cli("channel", "get", "ops"))
	if r := expectOK(t, cli("channel", "apply", "-f", file("again.yaml", got.Stdout))); !strings.Contains(r.Stdout, "channel ops unchanged") {
		t.Fatalf("channel get output applied back: %s\n%s", got.Stdout, r)
	}
	if r := expectOK(t, cli("channel", "test", "ops")); !strings.Contains(r.Stdout, "204") || hits.Load() != 1 {
		t.Fatalf("channel test: %s (receiver hit %d times)", r, hits.Load())
	}

	expectOK(t, cli("notify", "rule", "apply", "-f", file("rule.yaml",
		"name: ops-jobs\nselector: {team: ops}\nchannel: ops\non: [failed]\nafter_failures: 2\n")))
	if r := expectOK(t, cli("notify", "rule", "list")); !strings.Contains(r.Stdout, "ops-jobs") || !strings.Contains(r.Stdout, "team=ops") {
		t.Fatalf("notify rule list: %s", r)
	}
	expectOK(t, cli("job", "apply", "-f", file("job.yaml", "name: failing\nschedule: \"@every 1s\"\nlabels: {team: ops}\nhttp: {url: "+target.URL+"}\n")))
	expectFailure(t, cli("channel", "delete", "ops"), "notify rule ops-jobs", "--force")

	var list struct {
		Alerts []struct {
			ID, Event, Job, Channel, Delivery string
			ConsecutiveFailures               int `json:"consecutive_failures"`
		}
	}
	testutil.WaitFor(t, 30*time.Second, "a delivered failed alert in alert list", func() bool {
		r := expectOK(t, cli("alert", "list", "--job", "failing", "-o", "json"))
		if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
			t.Fatalf("alert list -o json: %v\n%s", err, r.Stdout)
		}
		return len(list.Alerts) == 1 && list.Alerts[0].Delivery == "DELIVERY_STATE_DELIVERED"
	})
	a := list.Alerts[0]
	if a.Event != "failed" || a.Channel != "ops" || a.ConsecutiveFailures != 2 || lastID.Load() != a.ID {
		t.Fatalf("alert %+v, receiver's last id %v", a, lastID.Load())
	}
	if r := expectOK(t, cli("alert", "list", "--open")); !strings.Contains(r.Stdout, a.ID) || !strings.Contains(r.Stdout, "delivered") {
		t.Fatalf("alert list --open: %s", r)
	}
	expectOK(t, cli("notify", "rule", "delete", "ops-jobs"))
	expectOK(t, cli("channel", "delete", "pd"))
}
