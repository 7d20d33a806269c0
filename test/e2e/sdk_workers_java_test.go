//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/raftcron/raftcron/internal/testutil"
)

// javaSDK is clients/java's worker SDK, run by its e2e worker program
// (clients/java/src/test/java/dev/raftcron/worker/E2eWorker.java).
var javaSDK = sdkLang{
	name: "java",
	need: func(t *testing.T) {
		testutil.NeedTool(t, "make", "apt-get install make")
		testutil.NeedTool(t, "javac", "apt-get install openjdk-17-jdk-headless")
	},
	build: makeClients("java-build"),
	command: func(root string) *exec.Cmd {
		build := filepath.Join(root, "clients", "build", "java")
		// A small heap and the serial collector: two workers beside three nodes on a
		// small machine.
		return exec.Command("java", "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-cp", filepath.Join(build, "main")+":"+filepath.Join(build, "test"), "dev.raftcron.worker.E2eWorker")
	},
}

// TestSDKWorkersJava: two Java workers through a worker's and the leader's
// SIGKILL (sdk_workers_test.go).
func TestSDKWorkersJava(t *testing.T) { runSDKPool(t, javaSDK) }
