package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A build without the hashicorpmetrics tag would run without Raft's
// metrics; it fails to compile instead, naming the tag.
func TestBuildWithoutTheMetricsTagFails(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=") // no -tags from the caller's environment
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("go build ./cmd/node without -tags hashicorpmetrics succeeded")
	}
	if !strings.Contains(string(out), "raftcronNeedsBuildTag_go_build_tags_hashicorpmetrics") {
		t.Fatalf("go build without the tag failed, but not naming it:\n%s", out)
	}
}
