package cli

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeServesTheWebUI: a node serves the UI's pages on its HTTP port,
// says who the caller is, and streams the runs it applies as events.
func TestServeServesTheWebUI(t *testing.T) {
	c := startCluster(t, 1)
	n := c.Nodes()[0]

	code, page, err := n.Get(context.Background(), "/ui/")
	if err != nil || code != http.StatusOK || !strings.Contains(string(page), `<div id="app">`) {
		t.Fatalf("GET /ui/: %d %v\n%s", code, err, page)
	}
	code, who, err := n.Get(context.Background(), "/ui/api/whoami")
	if err != nil || code != http.StatusOK || !strings.Contains(string(who), `"role":"management"`) {
		t.Fatalf("GET /ui/api/whoami without ACLs: %d %v %s, want role management", code, err, who)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.HTTPAddr+"/ui/api/runs/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	waitLine := func(what string) string {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), what) {
				return lines.Text()
			}
		}
		t.Fatalf("run events ended before %q: %v", what, lines.Err())
		return ""
	}
	waitLine("event: ready")
	expectOK(t, cliOn(t, n, nightlyJob, "job", "apply", "-f", "-"))
	expectOK(t, cliOn(t, n, "", "job", "trigger", "nightly-billing"))
	waitLine("event: run")
	if data := waitLine("data: "); !strings.Contains(data, `"job":"nightly-billing"`) || !strings.Contains(data, `"FIRE_KIND_MANUAL"`) {
		t.Errorf("the triggered run's event: %s", data)
	}
}
