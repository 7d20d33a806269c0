//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// nodeSDK is clients/node's worker SDK, run by its e2e worker program
// (clients/node/e2e/worker.ts), built and needing the tools as the Node
// zombie receiver does.
var nodeSDK = sdkLang{
	name:  "node",
	need:  nodeReceiver.need,
	build: nodeReceiver.build,
	command: func(root string) *exec.Cmd {
		return exec.Command("node", filepath.Join(root, "clients", "node", "dist", "e2e", "worker.js"))
	},
}

// TestSDKWorkersNode: two Node workers through a worker's and the leader's
// SIGKILL (sdk_workers_test.go).
func TestSDKWorkersNode(t *testing.T) { runSDKPool(t, nodeSDK) }
