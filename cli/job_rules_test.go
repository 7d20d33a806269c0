package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const hourlyJob = `name: hourly
schedules: ["0 * * * *", "30 12 * * *"]
jitter: 20s
max_runs: 100
pause_after_failures: 3
http: {url: http://billing.internal/run}
`

// TestCLIScheduleRules: the job file's new fields round-trip; pause
// --until, trigger --payload and --overlap, backfill and --cancel, run
// list --kind, each with its usage errors.
func TestCLIScheduleRules(t *testing.T) {
	t.Parallel()
	s := startRunServer(t)
	expectOK(t, s.cli(t, hourlyJob, "job", "apply", "-f", "-"))
	yaml := expectOK(t, s.cli(t, "", "job", "get", "hourly", "-o", "yaml")).Stdout
	for _, want := range []string{"schedules:\n- 0 * * * *\n- 30 12 * * *\n", "jitter: 20s\n", "max_runs: 100\n", "pause_after_failures: 3\n"} {
		if !strings.Contains(yaml, want) {
			t.Fatalf("job get -o yaml lacks %q:\n%s", want, yaml)
		}
	}
	if r := expectOK(t, s.cli(t, yaml, "job", "apply", "-f", "-")); !strings.Contains(r.Stdout, "unchanged") {
		t.Fatalf("round trip: %q", r.Stdout)
	}

	t.Run("trigger with a payload", func(t *testing.T) {
		r := expectOK(t, s.cli(t, `{"invoice":42}`, "job", "trigger", "hourly", "--payload", "-", "-o", "json"))
		var v runView
		if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || v.Payload != `{"invoice":42}` {
			t.Fatalf("trigger: %s (%v), want the payload in the run", r.Stdout, err)
		}
		r = expectOK(t, s.cli(t, "", "job", "trigger", "hourly", "--overlap", "allow", "-o", "json"))
		if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || !v.Concurrent {
			t.Fatalf("trigger --overlap allow beside an open run: %s (%v)", r.Stdout, err)
		}
		if r := s.cli(t, strings.Repeat("x", 64<<10+1), "job", "trigger", "hourly", "--payload", "-"); r.Code != ExitUsage ||
			!strings.Contains(r.Stderr, "--payload") {
			t.Fatalf("a payload over 64 KiB: %s", r)
		}
		expectFailure(t, s.cli(t, "", "job", "trigger", "hourly", "--overlap", "sometimes"), "overlap: must be one of")
	})

	t.Run("pause until", func(t *testing.T) {
		if r := s.cli(t, "", "job", "pause", "hourly", "--until", "tomorrow"); r.Code != ExitUsage || !strings.Contains(r.Stderr, "--until") {
			t.Fatalf("--until tomorrow: %s", r)
		}
		expectFailure(t, s.cli(t, "", "job", "pause", "hourly", "--until", "2020-01-01T00:00:00Z"), "until: must be after now")
		expectOK(t, s.cli(t, "", "job", "pause", "hourly", "--until", "2h"))
		var st jobStatusView
		r := expectOK(t, s.cli(t, "", "job", "status", "hourly", "-o", "json"))
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
			t.Fatal(err)
		}
		until, err := time.Parse(time.RFC3339, st.PausedUntil)
		if err != nil || time.Until(until) < 119*time.Minute || time.Until(until) > 121*time.Minute {
			t.Fatalf("job status: %s, want paused until two hours from now", r.Stdout)
		}
		if r := expectOK(t, s.cli(t, "", "job", "status", "hourly")); !strings.Contains(r.Stdout, "paused until ") {
			t.Fatalf("job status table: %q", r.Stdout)
		}
		expectOK(t, s.cli(t, "", "job", "resume", "hourly"))
	})

	t.Run("backfill", func(t *testing.T) {
		// Yesterday's last five hours: the job's 12:30 slot never falls in
		// them, whatever the time of day the test runs.
		to := time.Now().UTC().Truncate(24 * time.Hour)
		from := to.Add(-5 * time.Hour).Format(time.RFC3339)
		if r := s.cli(t, "", "job", "backfill", "hourly", "--from", to.Format(time.RFC3339), "--to", from); r.Code != ExitUsage ||
			!strings.Contains(r.Stderr, "must be before --to") {
			t.Fatalf("--from after --to: %s", r)
		}
		if r := s.cli(t, "", "job", "backfill", "hourly", "--from", from); r.Code != ExitUsage {
			t.Fatalf("no --to: %s", r)
		}
		r := expectOK(t, s.cli(t, "", "job", "backfill", "hourly", "--from", from, "--to", to.Format(time.RFC3339)))
		if !strings.Contains(r.Stdout, "running") || !strings.Contains(r.Stdout, "0 of 5 slots done") {
			t.Fatalf("backfill: %q, want it running with 5 slots", r.Stdout)
		}
		if r := expectOK(t, s.cli(t, "", "job", "status", "hourly")); !strings.Contains(r.Stdout, "backfill hourly-b") {
			t.Fatalf("job status does not show the backfill: %q", r.Stdout)
		}
		r = expectOK(t, s.cli(t, "", "job", "backfill", "hourly", "--cancel"))
		if !strings.Contains(r.Stdout, "cancelled") || !strings.Contains(r.Stdout, "cancel_requested") {
			t.Fatalf("cancel: %q", r.Stdout)
		}
		expectFailure(t, s.cli(t, "", "job", "backfill", "hourly", "--cancel"), "no backfill running")
	})

	t.Run("run list by kind", func(t *testing.T) {
		rows := tableRows(expectOK(t, s.cli(t, "", "run", "list", "--kind", "manual")).Stdout)
		if len(rows) != 3 {
			t.Fatalf("manual runs: %q, want the two triggered", rows)
		}
		if rows := tableRows(expectOK(t, s.cli(t, "", "run", "list", "--kind", "backfill")).Stdout); len(rows) != 1 {
			t.Fatalf("backfill runs: %q, want none", rows)
		}
		if r := s.cli(t, "", "run", "list", "--kind", "weekly"); r.Code != ExitUsage || !strings.Contains(r.Stderr, "backfill") {
			t.Fatalf("--kind weekly: %s", r)
		}
	})
}
