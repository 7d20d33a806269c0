package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

// apiCall sends one JSON API request to node and decodes the answer.
func apiCall(t *testing.T, node *localcluster.Node, method, path, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+node.HTTPAddr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: clustertest.CLITimeout}).Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, node.ID, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s %s on %s: %d %q is not a JSON object", method, path, node.ID, resp.StatusCode, raw)
	}
	return resp.StatusCode, doc
}

func apiOK(t *testing.T, node *localcluster.Node, method, path, body string) map[string]any {
	t.Helper()
	code, doc := apiCall(t, node, method, path, body)
	if code != http.StatusOK {
		t.Fatalf("%s %s on %s: %d %v, want 200", method, path, node.ID, code, doc)
	}
	return doc
}

// TestJSONAPIAndRunCancel drives a 3-node cluster through the JSON API of
// its followers: a write is forwarded to the leader, a manual run of a
// stuck webhook is cancelled through the log and its request cancelled by
// the leader, and the audit trail on every node tells who did what.
func TestJSONAPIAndRunCancel(t *testing.T) {
	stopped := make(chan error, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			stopped <- r.Context().Err()
		case <-time.After(time.Minute):
			stopped <- errors.New("the request was never cancelled")
		}
	}))
	defer hook.Close()

	c := startCluster(t, 3)
	leader := clustertest.Leader(t, c)
	var followers []*localcluster.Node
	for _, n := range c.Nodes() {
		if n != leader {
			followers = append(followers, n)
		}
	}
	a, b := followers[0], followers[1]

	spec := `{"schedule": "0 2 * * *", "http": {"url": "` + hook.URL + `/run", "timeout": "300s"}, "labels": {"team": "billing"}}`
	if doc := apiOK(t, a, "PUT", "/v1/jobs/stuck", spec); doc["created"] != true {
		t.Fatalf("PUT through a follower: %v", doc)
	}
	if doc := apiOK(t, leader, "GET", "/v1/jobs/stuck", ""); doc["job"].(map[string]any)["version"] != "1" {
		t.Fatalf("GET on the leader: %v", doc)
	}
	if code, doc := apiCall(t, b, "PUT", "/v1/jobs/stuck", `{"schedule": "@often", "http": {"url": "http://x/"}}`); code != http.StatusBadRequest ||
		!strings.Contains(doc["message"].(string), "schedule") {
		t.Fatalf("invalid PUT: %d %v, want 400 naming the schedule", code, doc)
	}

	run := apiOK(t, b, "POST", "/v1/jobs/stuck:trigger", "")["run"].(map[string]any)
	id := run["id"].(string)
	start := time.Now()
	cancelled := apiOK(t, a, "POST", "/v1/runs/"+id+":cancel", "")["run"].(map[string]any)
	if cancelled["state"] != "RUN_STATE_CANCELLED" || cancelled["reason"] != "cancel_requested" {
		t.Fatalf("cancel: %v", cancelled)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the webhook's request ended with %v, want it cancelled", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("the webhook's request was cancelled %v after the cancel", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the leader did not cancel the stuck webhook request")
	}
	if code, _ := apiCall(t, leader, "POST", "/v1/runs/"+id+":cancel", ""); code != http.StatusBadRequest {
		t.Fatalf("second cancel: %d, want 400 (FailedPrecondition)", code)
	}
	expectFailure(t, cliOn(t, b, "", "run", "cancel", id), "is finished (cancelled)")

	recs := apiOK(t, b, "GET", "/v1/audit?job=stuck", "")["records"].([]any)
	var actions []string
	for _, r := range recs {
		rec := r.(map[string]any)
		if rec["principal"] != "anonymous" {
			t.Fatalf("record %v, want principal anonymous (ACLs off)", rec)
		}
		actions = append(actions, rec["action"].(string))
	}
	if got := strings.Join(actions, " "); got != "cancel trigger create" {
		t.Fatalf("audit of stuck on a follower: %s, want cancel trigger create", got)
	}
	r := expectOK(t, cliOn(t, leader, "", "audit", "list", "--job", "stuck"))
	if rows := tableRows(r.Stdout); len(rows) != 4 || rows[1][3] != "cancel" {
		t.Fatalf("audit list on the leader: %q", r.Stdout)
	}

	if code, body, err := a.Get(context.Background(), "/v1/openapi.json"); err != nil || code != http.StatusOK || !strings.Contains(string(body), `"/v1/runs/{id}:cancel"`) {
		t.Fatalf("openapi.json: %d %v", code, err)
	}
	if st, err := a.Status(context.Background()); err != nil || st.ID != a.ID {
		t.Fatalf("/status beside the API: %+v %v", st, err)
	}
}
