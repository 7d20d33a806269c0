//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The check-in job pulse is due every checkinPeriod, a ping taking its
// slot up to checkinGrace either side of it; its pinger pings every
// second, so each slot's window holds several pings.
const (
	checkinPeriod = 4 * time.Second
	checkinGrace  = 2 * time.Second
)

// pinger pings a check-in job (success) every second until halted.
type pinger struct {
	stop context.CancelFunc
	done chan struct{}
}

func (w *alertWorld) startPings(jobs pb.JobServiceClient, job string) *pinger {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pinger{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			call, end := context.WithTimeout(ctx, 5*time.Second)
			_, _ = jobs.CheckinJob(call, &pb.CheckinJobRequest{Name: job, Status: "success"}) // a lost ping is a missed slot, which the ledger check sees
			end()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	w.t.Cleanup(p.halt)
	return p
}

func (p *pinger) halt() {
	p.stop()
	<-p.done
}

// status is the job's status as the leader has it.
func (w *alertWorld) status(job string) *pb.JobStatus {
	resp, err := w.c.jobs(w.c.leader()).GetJob(w.ctx(), &pb.GetJobRequest{Name: job})
	if err != nil {
		w.t.Logf("GetJob %s: %v", job, err)
		return nil
	}
	return resp.GetJob().GetStatus()
}

// checkinPart: a check-in job whose pings stop has every slot recorded
// missed (no_checkin) and pages missed once for the episode; when the
// pings resume it pages recovered once. Its start_within is the pings'
// grace: it is never late, though its rule asks for late.
func (w *alertWorld) checkinPart() {
	t, c := w.t, w.c
	w.job(c.leader(), &pb.JobSpec{Name: "pulse", Schedule: fmt.Sprintf("@every %ds", int(checkinPeriod.Seconds())),
		Checkin: &pb.CheckinTarget{}, Expect: &pb.Expect{StartWithin: durationpb.New(checkinGrace)}, HistoryLimit: 500,
		Notify: []*pb.Notify{{Channel: "hook", On: []string{"missed", "late", "recovered"}}}})
	jobs := c.jobs(c.leader())
	pings := w.startPings(jobs, "pulse")
	first := w.status("pulse").GetCursorUnix()
	testutil.WaitFor(t, alertTimeout, "two slots of pulse checked in", func() bool {
		return w.status("pulse").GetCursorUnix() >= first+2*int64(checkinPeriod.Seconds())
	})
	c.event("checkin", nil, "pulse's pings stop")
	pings.halt()
	w.waitAlert("pulse", "missed", "hook", true)
	testutil.WaitFor(t, alertTimeout, "three slots of pulse missed", func() bool {
		return w.status("pulse").GetMissed() >= 3
	})
	c.event("checkin", nil, "pulse's pings resume")
	pings = w.startPings(jobs, "pulse")
	w.waitAlert("pulse", "recovered", "hook", true)
	resumed := w.status("pulse").GetCursorUnix()
	testutil.WaitFor(t, alertTimeout, "a slot of pulse checked in after the recovery", func() bool {
		return w.status("pulse").GetCursorUnix() > resumed
	})
	// Paused, its slots are missed without a page: the pings can stop.
	if _, err := jobs.PauseJob(w.ctx(), &pb.PauseJobRequest{Name: "pulse", Note: "the scenario is over"}); err != nil {
		t.Fatal(err)
	}
	pings.halt()
	if v := w.checkinLedger("pulse"); len(v) > 0 {
		t.Fatalf("pulse's ledger: %s", strings.Join(v, "; "))
	}
}

// checkinLedger checks that every slot of the check-in job from its
// first checked-in slot to its last is in the ledger exactly once: a
// check-in that took it, or a missed record that covers it, and that
// some were missed no_checkin.
func (w *alertWorld) checkinLedger(job string) []string {
	resp, err := w.c.runsClient(w.c.leader()).ListRuns(w.ctx(), &pb.ListRunsRequest{Job: job, Limit: 1000})
	if err != nil {
		return []string{fmt.Sprintf("ListRuns: %v", err)}
	}
	period := int64(checkinPeriod.Seconds())
	var out []string
	taken := map[int64]int{}
	var checkedIn []int64
	noCheckin := uint64(0)
	for _, r := range resp.GetRuns() {
		switch {
		case r.GetKind() == pb.FireKind_FIRE_KIND_CHECKIN && !r.GetOffSchedule():
			taken[r.GetSlotUnix()]++
			checkedIn = append(checkedIn, r.GetSlotUnix())
		case r.GetState() == pb.RunState_RUN_STATE_MISSED:
			if n := uint64((r.GetLastSlotUnix()-r.GetSlotUnix())/period + 1); n != r.GetMissedCount() {
				out = append(out, fmt.Sprintf("missed record %s covers %d..%d but counts %d", r.GetId(), r.GetSlotUnix(), r.GetLastSlotUnix(), r.GetMissedCount()))
			}
			for s := r.GetSlotUnix(); s <= r.GetLastSlotUnix(); s += period {
				taken[s]++
			}
			if r.GetReason() == fsm.ReasonNoCheckin {
				noCheckin += r.GetMissedCount()
			}
		}
	}
	if len(checkedIn) < 2 {
		return append(out, fmt.Sprintf("%d slots checked in, want some before and after the gap", len(checkedIn)))
	}
	for s := slices.Min(checkedIn); s <= slices.Max(checkedIn); s += period {
		if taken[s] != 1 {
			out = append(out, fmt.Sprintf("slot %d is in the ledger %d times", s, taken[s]))
		}
	}
	if noCheckin < 3 {
		out = append(out, fmt.Sprintf("%d slots missed no_checkin, want at least 3", noCheckin))
	}
	return out
}

// checkinFalse: `raftcron checkin NAME -- false`, as a crontab line runs
// it on another box, exits 1 and pages failed.
func (w *alertWorld) checkinFalse(bin string) {
	t, c := w.t, w.c
	w.job(c.leader(), &pb.JobSpec{Name: "cronbox", Schedule: "0 0 1 1 *", Checkin: &pb.CheckinTarget{},
		Notify: []*pb.Notify{{Channel: "hook", On: []string{"failed"}}}})
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = c.net.Addr(i)
	}
	boxed, err := c.net.WorkerCommand(0, bin, "checkin", "--addr", strings.Join(addrs, ","), "cronbox", "--", "false")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), alertTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, boxed.Path, boxed.Args[1:]...)
	cmd.Env = proc.Environ()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || ctx.Err() != nil {
		t.Fatalf("raftcron checkin cronbox -- false: %v, want exit status 1\n%s", err, out)
	}
	a := w.waitAlert("cronbox", "failed", "hook", true)
	r, err := c.runsClient(c.leader()).GetRun(w.ctx(), &pb.GetRunRequest{Id: a.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	if run := r.GetRun(); run.GetKind() != pb.FireKind_FIRE_KIND_CHECKIN || run.GetState() != pb.RunState_RUN_STATE_FAILED ||
		fsm.CurrentAttempt(run).GetExitCode() != 1 {
		t.Fatalf("the failed alert's run %v, want a check-in run failed with exit status 1", run)
	}
}
