//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/raftcron/raftcron/internal/testutil"
)

// nodeSDK is clients/node's worker SDK, run by its e2e worker program
// (clients/node/e2e/worker.ts, compiled by `make -C clients node-build`).
var nodeSDK = sdkLang{
	name: "node",
	need: func(t *testing.T) {
		testutil.NeedTool(t, "make", "apt-get install make")
		testutil.NeedTool(t, "node", "apt-get install nodejs")
		testutil.NeedTool(t, "npm", "apt-get install npm")
	},
	build: makeClients("node-build"),
	command: func(root string) *exec.Cmd {
		return exec.Command("node", filepath.Join(root, "clients", "node", "dist", "e2e", "worker.js"))
	},
}

// TestSDKWorkersNode: two Node workers through a worker's and the leader's
// SIGKILL (sdk_workers_test.go).
func TestSDKWorkersNode(t *testing.T) { runSDKPool(t, nodeSDK) }
