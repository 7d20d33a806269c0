//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// pythonSDK is clients/python's worker SDK, run by its e2e worker program.
var pythonSDK = sdkLang{
	name: "python",
	command: func(root string) *exec.Cmd {
		dir := filepath.Join(root, "clients", "python")
		cmd := exec.Command(python(), filepath.Join(dir, "tests", "e2e_worker.py"))
		cmd.Env = []string{"PYTHONPATH=" + dir, "PYTHONUNBUFFERED=1"}
		return cmd
	},
}

// TestSDKWorkersPython: two Python workers through a worker's and the leader's
// SIGKILL (sdk_workers_test.go).
func TestSDKWorkersPython(t *testing.T) { runSDKPool(t, pythonSDK) }
