//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRecheck checks a kept scenario directory again (E2E_RECHECK=DIR):
// its history.json, with the ledgers replayed afresh from the node data
// dirs in it. For working on the checker; it does nothing without the
// variable.
func TestRecheck(t *testing.T) {
	dir := os.Getenv("E2E_RECHECK")
	if dir == "" {
		t.Skip("set E2E_RECHECK to a kept scenario directory")
	}
	var h History
	if err := Load(filepath.Join(dir, "history.json"), &h); err != nil {
		t.Fatal(err)
	}
	var saved []NodeLedger
	if err := Load(filepath.Join(dir, "ledgers.json"), &saved); err != nil {
		t.Fatal(err)
	}
	var ledgers []NodeLedger
	for _, l := range saved {
		if l.Source != "data-dir" {
			ledgers = append(ledgers, l)
			continue
		}
		fresh, err := ReplayDataDir(l.Node, filepath.Join(dir, l.Node), l.Index)
		if err != nil {
			t.Fatal(err)
		}
		ledgers = append(ledgers, fresh)
	}
	rep := Check(&h, ledgers, CheckOptions{RegistryTimeout: 2 * time.Minute})
	t.Logf("%s (E2E_SEED=%d):\n%s", h.Scenario, h.Seed, rep)
	if !rep.OK() {
		t.Fail()
	}
}
