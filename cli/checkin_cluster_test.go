package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/localcluster"
	"github.com/raftcron/raftcron/localcluster/clustertest"
)

const checkinJobs = `- name: heartbeat
  schedule: "@every 2s"
  checkin: {}
  expect: {start_within: 1s}
  history_limit: 100
  labels: {team: ops}
- name: billing-ping
  schedule: "@daily"
  checkin: {}
  labels: {team: billing}
`

// checkinPeriod is heartbeat's: its slots are the even Unix seconds.
const checkinPeriod = 2 * time.Second

// TestCLICheckins: a check-in job every 2 s, pinged by `raftcron checkin
// heartbeat -- true` at its slots through a follower, then not for a
// while, then again. The ledger accounts for every slot exactly once: a
// check-in run for the slots pinged, missed no_checkin for the others,
// the slots of the pause among them. `-- false` exits 1 and its run failed
// with exit code 1. The pings carry a checkin token, which checks in
// nothing outside its selector and creates no job.
func TestCLICheckins(t *testing.T) {
	c := clustertest.Start(t, localcluster.Options{Nodes: 3, Args: testRaft, ACL: true})
	follower := clustertest.Follower(t, c)
	addrs := []string{follower.Addr}
	for _, n := range c.Nodes() {
		if n != follower {
			addrs = append(addrs, n.Addr)
		}
	}
	on := "--addr=" + strings.Join(addrs, ",")
	mgmt := "--token=" + c.Token()
	expectOK(t, runCLI(t, checkinJobs, "job", "apply", "-f", "-", on, mgmt))
	var tok tokenView
	r := expectOK(t, runCLI(t, "", "acl", "token", "create", "--name", "backup-host", "--role", "checkin",
		"--selector", "team=ops", "-o", "json", on, mgmt))
	if err := json.Unmarshal([]byte(r.Stdout), &tok); err != nil || tok.Secret == "" || tok.Role != "checkin" {
		t.Fatalf("token create: %v\n%s", err, r.Stdout)
	}
	cron := "--token=" + tok.Secret

	// Ping the next slots, 3 of them, skip 2, ping 3 more: each ping a
	// moment after its slot, as a crontab line would start it.
	first := nextSlot(time.Now().Add(time.Second))
	var pinged, skipped []int64
	for i := range 8 {
		slot := first.Add(time.Duration(i) * checkinPeriod)
		if i == 3 || i == 4 {
			skipped = append(skipped, slot.Unix())
			continue
		}
		time.Sleep(time.Until(slot.Add(150 * time.Millisecond)))
		expectOK(t, runCLI(t, "", "checkin", "heartbeat", on, cron, "--", "/bin/true"))
		pinged = append(pinged, slot.Unix())
	}
	last := pinged[len(pinged)-1]

	fail := runCLI(t, "", "checkin", "heartbeat", on, cron, "--", "/bin/false")
	if fail.Code != 1 || fail.Stderr != "" {
		t.Fatalf("checkin -- false: %s, want exit 1 and nothing on stderr", fail)
	}

	outside := runCLI(t, "", "checkin", "billing-ping", on, cron)
	expectFailure(t, outside, `job "billing-ping" not found`)
	expectFailure(t, runCLI(t, checkinJobs, "job", "apply", "-f", "-", on, cron), "permission denied", "role write")
	expectFailure(t, runCLI(t, "", "run", "list", on, cron), "permission denied")

	// Every slot up to the last pinged one is recorded once its grace has
	// passed: a run, or a missed record.
	var runs []runView
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := expectOK(t, runCLI(t, "", "run", "list", "--job", "heartbeat", "--limit", "200", "-o", "json", on, mgmt))
		runs = nil
		if err := json.Unmarshal([]byte(r.Stdout), &runs); err != nil {
			t.Fatalf("run list: %v\n%s", err, r.Stdout)
		}
		if recordedThrough(runs) >= last || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkLedger(t, runs, first.Unix(), last, pinged, skipped)
}

// nextSlot is heartbeat's first slot after t.
func nextSlot(t time.Time) time.Time {
	return t.Truncate(checkinPeriod).Add(checkinPeriod)
}

// recordedThrough is the newest slot a run or a missed record holds.
func recordedThrough(runs []runView) int64 {
	var newest int64
	for _, r := range runs {
		if r.OffSchedule {
			continue
		}
		newest = max(newest, unixOf(r.ScheduledAt), unixOf(r.LastScheduledAt))
	}
	return newest
}

func unixOf(stamp string) int64 {
	if stamp == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339, stamp)
	if err != nil {
		return 0
	}
	return t.Unix()
}

// checkLedger checks heartbeat's ledger over its slots from..to: each one
// a check-in run or missed no_checkin, never both or twice; the skipped
// ones missed; most pinged ones checked in (a ping delayed past the 1 s
// grace is off schedule instead, and its slot missed), every check-in of
// `true` succeeded and the one of `false` failed with exit code 1.
func checkLedger(t *testing.T, runs []runView, from, to int64, pinged, skipped []int64) {
	t.Helper()
	owner := map[int64]string{}
	claim := func(slot int64, who string) {
		if prev, ok := owner[slot]; ok {
			t.Errorf("slot %d is %s and %s", slot, prev, who)
		}
		owner[slot] = who
	}
	var failed []runView
	for _, r := range runs {
		switch {
		case r.State == "missed":
			if r.Reason != "no_checkin" {
				t.Errorf("missed record %+v, want reason no_checkin", r)
			}
			for s := unixOf(r.ScheduledAt); s <= max(unixOf(r.LastScheduledAt), unixOf(r.ScheduledAt)); s += 2 {
				claim(s, "missed")
			}
		case r.Kind != "checkin" || len(r.Attempts) != 1 || r.Attempts[0].Token == 0:
			t.Errorf("run %+v, want a check-in run with its own token", r)
		case r.State == "failed":
			failed = append(failed, r)
		case r.State != "succeeded" || r.Attempts[0].ExitCode == nil || *r.Attempts[0].ExitCode != 0:
			t.Errorf("check-in of true: %+v, want succeeded with exit code 0", r)
		case !r.OffSchedule:
			claim(unixOf(r.ScheduledAt), "checked in")
		}
	}
	checkedIn := 0
	for s := from; s <= to; s += 2 {
		switch {
		case owner[s] == "":
			t.Errorf("slot %d has neither a run nor a missed record", s)
		case slices.Contains(skipped, s) && owner[s] != "missed":
			t.Errorf("slot %d, skipped, is %s", s, owner[s])
		case slices.Contains(pinged, s) && owner[s] == "checked in":
			checkedIn++
		}
	}
	t.Logf("%d of the %d slots pinged were checked in", checkedIn, len(pinged))
	if checkedIn < len(pinged)/2 {
		t.Errorf("%d of the %d slots pinged were checked in, want most", checkedIn, len(pinged))
	}
	if len(failed) != 1 || failed[0].Attempts[0].ExitCode == nil || *failed[0].Attempts[0].ExitCode != 1 ||
		failed[0].Attempts[0].Detail != "exit status 1" || failed[0].Attempts[0].PingedBy != "backup-host" {
		t.Errorf("failed runs %+v, want the one of false with exit code 1, checked in by backup-host", failed)
	}
	if t.Failed() {
		t.Logf("ledger: %+v", runs)
	}
}
