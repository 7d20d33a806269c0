package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const unitFile = "systemd/raftcron.service"

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit. verify
// insists that ExecStart's binary exists, so the test points it at a stand-in
// executable; that path is the only line it changes.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := tool(t, "systemd-analyze", "install systemd (Debian package systemd)")
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	const bin = "/usr/local/bin/raftcron"
	if !bytes.Contains(unit, []byte("ExecStart="+bin+" serve")) {
		t.Fatalf("%s: ExecStart is not %s serve", unitFile, bin)
	}
	dir := t.TempDir()
	standIn := filepath.Join(dir, "raftcron")
	if err := os.WriteFile(standIn, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "raftcron.service")
	if err := os.WriteFile(copyPath, bytes.ReplaceAll(unit, []byte(bin), []byte(standIn)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestSystemdUnitIsHardened keeps the settings that make the unit safe to
// run: a reviewer removing one should have to remove it here too.
func TestSystemdUnitIsHardened(t *testing.T) {
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"User=raftcron", "ProtectSystem=strict", "StateDirectory=raftcron", "NoNewPrivileges=yes",
		"Restart=on-failure", "KillSignal=SIGTERM", "ExecReload=/bin/kill -HUP $MAINPID",
	} {
		if !strings.Contains(string(unit), "\n"+want+"\n") {
			t.Errorf("%s lacks %q", unitFile, want)
		}
	}
}
