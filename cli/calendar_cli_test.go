package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

// A job every second on a real cluster fires around an exclusion calendar
// and a freeze: every slot from its creation on is in the ledger once,
// fired or skipped with the rule that stopped it, and `job next` shows the
// skips before they happen. Bad calendar and freeze input is refused
// naming the field, and a calendar in use is not deleted.
func TestCalendarsAndFreezesOnACluster(t *testing.T) {
	c := startCluster(t, 3)
	leader, follower := clustertest.Leader(t, c), clustertest.Follower(t, c)
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The windows start well after setup, on whole seconds.
	base := time.Now().Truncate(time.Second).Add(15 * time.Second)
	at := func(s int) string { return base.Add(time.Duration(s) * time.Second).UTC().Format(time.RFC3339) }
	calendar := write("closed.yaml", fmt.Sprintf("name: closed\nentries:\n  - {from: %q, to: %q, note: lunch}\n", at(0), at(5)))
	expectOK(t, cliOn(t, follower, "", "calendar", "apply", "-f", calendar))
	expectOK(t, cliOn(t, follower, "", "freeze", "create", "maint", "--from", at(9), "--to", at(12), "--note", "db upgrade"))
	job := write("tick.yaml", `
name: tick
schedule: "* * * * * *"
calendars: {exclude: [closed]}
http: {url: "http://127.0.0.1:1/tick", timeout: 1s}
overlap: allow
history_limit: 1000
`)
	expectOK(t, cliOn(t, leader, "", "job", "apply", "-f", job))

	next := expectOK(t, cliOn(t, follower, "", "job", "next", "tick", "--count", "5", "--after", at(-1))).Stdout
	if rows := tableRows(next); len(rows) != 6 || strings.Join(rows[1], "|") != at(0)+"|calendar:closed" || strings.Join(rows[5], "|") != at(4)+"|calendar:closed" {
		t.Fatalf("job next does not mark the calendar's slots:\n%s", next)
	}
	expectFailure(t, cliOn(t, follower, "", "calendar", "delete", "closed"), `job "tick"`)
	expectFailure(t, cliOn(t, follower, "", "calendar", "import", "bad", "--ics", write("bad.ics", "BEGIN:VCALENDAR\r\nnope\r\n")), "ics:")
	expectFailure(t, cliOn(t, follower, "", "freeze", "create", "backwards", "--from", at(20), "--to", at(10)), "to:")
	r := expectOK(t, cliOn(t, follower, "", "calendar", "get", "closed", "-o", "yaml"))
	expectOK(t, cliOn(t, leader, r.Stdout, "calendar", "apply", "-f", "-")) // applies back unchanged
	if got := expectOK(t, cliOn(t, follower, "", "freeze", "list")).Stdout; !strings.Contains(got, "maint") || !strings.Contains(got, "db upgrade") {
		t.Fatalf("freeze list: %q", got)
	}

	testutil.WaitFor(t, 60*time.Second, "the slots after the freeze", func() bool { return time.Now().After(base.Add(16 * time.Second)) })
	runs := ledgerOf(t, cliOn(t, leader, "", "run", "list", "--job", "tick", "--limit", "1000", "-o", "json"))
	for s := -3; s <= 14; s++ {
		slot := at(s)
		got := runs[slot]
		want := ""
		switch {
		case s >= 0 && s < 5:
			want = "calendar:closed"
		case s >= 9 && s < 12:
			want = "freeze:maint"
		}
		switch {
		case len(got) != 1:
			t.Errorf("slot %s (%+d s) has %d records, want one fire or one skip: %v", slot, s, len(got), got)
		case want != "" && (got[0].State != "skipped" || got[0].Reason != want):
			t.Errorf("slot %+d s: %+v, want skipped %s", s, got[0], want)
		case want == "" && got[0].State == "skipped":
			t.Errorf("slot %+d s: %+v, want it fired", s, got[0])
		}
	}
}

// ledgerOf reads `run list -o json` into the runs of each slot; a MISSED
// range stands for every second it covers.
func ledgerOf(t *testing.T, r cliResult) map[string][]runView {
	t.Helper()
	var views []runView
	if err := json.Unmarshal([]byte(expectOK(t, r).Stdout), &views); err != nil {
		t.Fatalf("run list: %v", err)
	}
	out := map[string][]runView{}
	for _, v := range views {
		from, err := time.Parse(time.RFC3339, v.ScheduledAt)
		if err != nil {
			t.Fatal(err)
		}
		to := from
		if v.LastScheduledAt != "" {
			if to, err = time.Parse(time.RFC3339, v.LastScheduledAt); err != nil {
				t.Fatal(err)
			}
		}
		for s := from; !s.After(to); s = s.Add(time.Second) {
			key := s.UTC().Format(time.RFC3339)
			out[key] = append(out[key], v)
		}
	}
	return out
}
