package cli

import (
	"testing"

	"github.com/raftcron/raftcron/internal/testutil"
)

// The limits reach the node's services: a spec beyond --max-headers and a
// create beyond --max-jobs fail with one line naming the limit.
func TestServeEnforcesItsLimits(t *testing.T) {
	c := startCluster(t, 1, "--max-headers", "1", "--max-jobs", "1")
	node := c.Nodes()[0]
	headers := testutil.WriteFile(t, "headers.yaml", `name: headers
schedule: "@hourly"
http: {url: http://127.0.0.1:1/, headers: {A: "1", B: "2"}}
`)
	expectFailure(t, cliOn(t, node, "", "job", "create", "-f", headers), "http.headers", "limit of 1 headers")
	expectOK(t, cliOn(t, node, "", "job", "create", "-f", testutil.WriteFile(t, "nightly.yaml", nightlyJob)))
	second := testutil.WriteFile(t, "second.yaml", `name: second
schedule: "@hourly"
http: {url: http://127.0.0.1:1/}
`)
	expectFailure(t, cliOn(t, node, "", "job", "create", "-f", second), "max_jobs", "1 jobs")
}
