package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCLIRunCancel(t *testing.T) {
	t.Parallel()
	s := startRunServer(t)
	expectOK(t, s.cli(t, nightlyJob, "job", "apply", "-f", "-"))
	expectOK(t, s.cli(t, "", "job", "trigger", "nightly-billing"))

	r := expectOK(t, s.cli(t, "", "run", "cancel", "nightly-billing-1", "-o", "json"))
	var v runView
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatal(err)
	}
	if v.State != "cancelled" || v.Reason != "cancel_requested" || len(v.Attempts) != 1 || v.Attempts[0].State != "cancelled" {
		t.Fatalf("run cancel: %s", r.Stdout)
	}
	rows := tableRows(expectOK(t, s.cli(t, "", "run", "list")).Stdout)
	if len(rows) != 2 || rows[1][4] != "cancelled" {
		t.Fatalf("run list after the cancel: %q", rows)
	}

	expectFailure(t, s.cli(t, "", "run", "cancel", "nightly-billing-1"),
		`run "nightly-billing-1" is finished (cancelled): there is nothing to cancel`)
	expectFailure(t, s.cli(t, "", "run", "cancel", "nightly-billing-9"), `run "nightly-billing-9" not found`)
	if r := s.cli(t, "", "run", "cancel"); r.Code != ExitUsage {
		t.Fatalf("run cancel without an id: %s, want a usage error", r)
	}
}

func TestCLIAuditList(t *testing.T) {
	t.Parallel()
	s := startRunServer(t)
	expectOK(t, s.cli(t, nightlyJob, "job", "apply", "-f", "-"))
	expectOK(t, s.cli(t, strings.Replace(nightlyJob, `"0 2 * * *"`, `"30 3 * * *"`, 1), "job", "apply", "-f", "-"))
	expectOK(t, s.cli(t, "", "job", "pause", "nightly-billing", "--note", "billing freeze"))
	expectOK(t, s.cli(t, "", "job", "trigger", "nightly-billing", "--force"))
	expectOK(t, s.cli(t, "", "run", "cancel", "nightly-billing-1"))

	rows := tableRows(expectOK(t, s.cli(t, "", "audit", "list")).Stdout)
	if got := strings.Join(rows[0], "|"); got != "SEQ|TIME|PRINCIPAL|ACTION|JOB|VERSION|CHANGES" {
		t.Fatalf("header %q", got)
	}
	var actions []string
	for _, row := range rows[1:] {
		actions = append(actions, row[3])
	}
	if got := strings.Join(actions, " "); got != "cancel trigger pause update create audit_limit" {
		t.Fatalf("actions, newest first: %s", got)
	}
	if update := rows[4]; update[2] != "anonymous" || update[5] != "1→2" ||
		update[6] != `schedule: "0 2 * * *" → "30 3 * * *"` {
		t.Fatalf("update row %q", update)
	}

	r := expectOK(t, s.cli(t, "", "audit", "list", "--job", "nightly-billing", "--limit", "2", "-o", "json"))
	var recs []auditView
	if err := json.Unmarshal([]byte(r.Stdout), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Action != "cancel" || recs[0].RunID != "nightly-billing-1" ||
		recs[1].Action != "trigger" || recs[1].Principal != "anonymous" || !strings.HasSuffix(recs[1].Time, "Z") {
		t.Fatalf("audit list --job --limit 2 -o json: %s", r.Stdout)
	}
	r = expectOK(t, s.cli(t, "", "audit", "list", "--before", "3", "-o", "json"))
	if err := json.Unmarshal([]byte(r.Stdout), &recs); err != nil || len(recs) != 2 || recs[0].Seq != 2 {
		t.Fatalf("audit list --before 3: %s", r.Stdout)
	}

	if r := s.cli(t, "", "audit", "list", "--limit", "5000"); r.Code != ExitUsage || !strings.Contains(r.Stderr, "--limit") {
		t.Fatalf("--limit 5000: %s", r)
	}
	expectFailure(t, s.cli(t, "", "audit", "list", "--job", "Bad Name"), "invalid job")
}
