package fsm_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func putChannelCmd(ch *pb.Channel) *pb.Command {
	return &pb.Command{Kind: &pb.Command_PutChannel{PutChannel: &pb.PutChannelCommand{Channel: ch}}}
}

func putRuleCmd(r *pb.NotifyRule) *pb.Command {
	return &pb.Command{Kind: &pb.Command_PutNotifyRule{PutNotifyRule: &pb.PutNotifyRuleCommand{Rule: r}}}
}

func webhook(name string) *pb.Channel {
	return &pb.Channel{Name: name, Webhook: &pb.WebhookChannel{Url: "http://hooks.test/" + name}}
}

func checkCmd(term uint64, checks ...*pb.AlertCheck) *pb.Command {
	return &pb.Command{Kind: &pb.Command_CheckAlerts{CheckAlerts: &pb.CheckAlertsCommand{LeaderId: leaderID, Term: term, Checks: checks}}}
}

func deliveredCmd(id string, ok, final bool) *pb.Command {
	return &pb.Command{Kind: &pb.Command_RecordDeliveries{RecordDeliveries: &pb.RecordDeliveriesCommand{Records: []*pb.DeliveryRecord{
		{AlertId: id, Attempt: &pb.DeliveryAttempt{Ok: ok, Final: final, Status: 200, Answer: "fine"}},
	}}}}
}

// alertJob is a job that notifies channel ops of events, after failures
// failures in a row, with expectations expect.
func alertJob(name string, expect *pb.Expect, failures uint32, events ...string) *pb.JobSpec {
	spec := testSpec(name)
	spec.Expect = expect
	spec.Notify = []*pb.Notify{{Channel: "ops", On: events, AfterFailures: failures}}
	return spec
}

// alertHarness is a harness whose cluster has the channel ops.
func alertHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.mustOK(putChannelCmd(webhook("ops")))
	return h
}

// at makes the next entry's proposer time exactly t.
func (h *harness) at(t time.Time) { h.now = t.Add(-time.Second) }

// alerts are the job's alerts, oldest first.
func (h *harness) alerts(job string) []*pb.Alert {
	h.t.Helper()
	all, _ := h.f.Alerts(fsm.AlertQuery{Job: job})
	out := make([]*pb.Alert, len(all))
	for i, a := range all {
		out[len(all)-1-i] = a
	}
	return out
}

func (h *harness) wantEvents(job string, want ...string) []*pb.Alert {
	h.t.Helper()
	got := h.alerts(job)
	names := make([]string, len(got))
	for i, a := range got {
		names[i] = a.GetEvent()
	}
	if len(names) != len(want) {
		h.t.Fatalf("alerts of %s: %v, want %v", job, names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			h.t.Fatalf("alerts of %s: %v, want %v", job, names, want)
		}
	}
	return got
}

// failRun fires the next slot of the job and fails it.
func (h *harness) runOnce(name string, outcome pb.RunState) *pb.Run {
	h.t.Helper()
	res := h.accepted(slotFire(name, h.job(name).GetGeneration(), h.nextSlot(name)))
	return h.finish(res.GetRun(), outcome, h.now)
}

func TestFailedPagesOnceAfterFailuresAndRecoveredClosesTheEpisode(t *testing.T) {
	h := alertHarness(t)
	h.create(alertJob("billing", nil, 3, "failed", "recovered"))
	h.runOnce("billing", stFailed)
	h.runOnce("billing", stFailed)
	h.wantEvents("billing") // one run short of after_failures
	third := h.runOnce("billing", stFailed)
	got := h.wantEvents("billing", "failed")
	a := got[0]
	if a.GetConsecutiveFailures() != 3 || a.GetRunId() != third.GetId() || a.GetChannel() != "ops" ||
		a.GetToken() != fsm.CurrentAttempt(third).GetToken() || a.GetDelivery() != pb.DeliveryState_DELIVERY_STATE_PENDING {
		t.Fatalf("failed alert %v, want the third run's, 3 failures in a row, pending to ops", a)
	}
	h.runOnce("billing", stDeadline)
	h.runOnce("billing", stFenced)
	h.wantEvents("billing", "failed") // one page per episode
	if st := h.status("billing"); st.GetConsecutiveFailures() != 5 {
		t.Fatalf("consecutive failures %d, want 5", st.GetConsecutiveFailures())
	}
	ok := h.runOnce("billing", stSucceeded)
	got = h.wantEvents("billing", "failed", "recovered")
	if r := got[1]; r.GetEpisode() != a.GetEpisode() || r.GetEpisodeEvent() != "failed" || r.GetRunId() != ok.GetId() {
		t.Fatalf("recovered %v, want episode %s of failed closed by %s", r, a.GetEpisode(), ok.GetId())
	}
	if st := h.status("billing"); st.GetConsecutiveFailures() != 0 || st.GetLastSuccessUnixNano() == 0 {
		t.Fatalf("status after a success %v, want no failures in a row and a last success", st)
	}
	if _, eps := h.f.Alerts(fsm.AlertQuery{}); len(eps) != 0 {
		t.Fatalf("open episodes %v after recovered", eps)
	}
	// A new episode: the count starts again.
	h.runOnce("billing", stFailed)
	h.runOnce("billing", stFailed)
	h.runOnce("billing", stFailed)
	got = h.wantEvents("billing", "failed", "recovered", "failed")
	if got[2].GetEpisode() == a.GetEpisode() {
		t.Fatal("the second failed episode has the first one's id")
	}
}

func TestLateIsJudgedExactlyAtStartWithin(t *testing.T) {
	h := alertHarness(t)
	within := 2 * time.Minute
	h.create(alertJob("nightly", &pb.Expect{StartWithin: durationpb.New(within)}, 0, "late"))
	gen := h.job("nightly").GetGeneration()

	// A fire exactly at slot + start_within is on time; a nanosecond later
	// it is late, once.
	slot := h.nextSlot("nightly")
	h.at(time.Unix(slot, 0).Add(within))
	r := h.accepted(slotFire("nightly", gen, slot)).GetRun()
	h.finish(r, stSucceeded, h.now)
	h.wantEvents("nightly")
	slot += 60
	h.at(time.Unix(slot, 0).Add(within + time.Nanosecond))
	late := h.accepted(slotFire("nightly", gen, slot)).GetRun()
	got := h.wantEvents("nightly", "late")
	if got[0].GetSlotUnix() != slot || got[0].GetRunId() != late.GetId() {
		t.Fatalf("late alert %v, want slot %d, run %s", got[0], slot, late.GetId())
	}
	h.finish(late, stSucceeded, h.now)

	// No dispatch at all: the leader's check at slot + start_within finds
	// nothing yet, a nanosecond later it raises late (a new episode: the
	// success closed the first, without a word, since nobody asked for
	// recovered), and a second check of the slot nothing.
	slot += 60
	check := &pb.AlertCheck{Job: "nightly", Event: "late", SlotUnix: slot}
	h.at(time.Unix(slot, 0).Add(within))
	h.mustOK(checkCmd(1, check))
	h.wantEvents("nightly", "late")
	h.at(time.Unix(slot, 0).Add(within + time.Nanosecond))
	res := h.mustOK(checkCmd(1, check))
	if len(res.GetAlerts()) != 1 || res.GetAlerts()[0].GetEvent() != "late" || res.GetAlerts()[0].GetRunId() != "" {
		t.Fatalf("check raised %v, want one late alert about no run", res.GetAlerts())
	}
	h.mustOK(checkCmd(1, check))
	got = h.wantEvents("nightly", "late", "late")
	if got[0].GetEpisode() == got[1].GetEpisode() {
		t.Fatal("a late after a success shares the closed episode")
	}
	// The slot fired later is not late a second time.
	h.accepted(slotFire("nightly", gen, slot))
	h.wantEvents("nightly", "late", "late")
	if h.status("nightly").GetLateSlotUnix() != slot {
		t.Fatalf("late_slot_unix %d, want %d", h.status("nightly").GetLateSlotUnix(), slot)
	}
}

func TestTooLongAtStartPlusMaxDurationOncePerRun(t *testing.T) {
	h := alertHarness(t)
	limit := 10 * time.Minute
	h.create(alertJob("backup", &pb.Expect{MaxDuration: durationpb.New(limit)}, 0, "too_long", "recovered"))
	r := h.accepted(slotFire("backup", h.job("backup").GetGeneration(), h.nextSlot("backup"))).GetRun()
	start := time.Unix(0, r.GetCreatedAtUnixNano())
	if due := h.f.TooLongDue(start.Add(limit).UnixNano()-1, 10); len(due) != 0 {
		t.Fatalf("due before the deadline: %v", due)
	}
	due := h.f.TooLongDue(start.Add(limit).UnixNano(), 10)
	if len(due) != 1 || due[0].GetRunId() != r.GetId() {
		t.Fatalf("due at the deadline: %v, want %s", due, r.GetId())
	}
	h.at(start.Add(limit - time.Nanosecond))
	h.mustOK(checkCmd(1, due[0]))
	h.wantEvents("backup")
	h.at(start.Add(limit))
	h.mustOK(checkCmd(1, due[0]))
	h.mustOK(checkCmd(1, due[0]))
	got := h.wantEvents("backup", "too_long")
	if got[0].GetRunId() != r.GetId() || !h.run(r.GetId()).GetJudgedTooLong() {
		t.Fatalf("too_long %v for run %v", got[0], h.run(r.GetId()))
	}
	if len(h.f.TooLongDue(start.Add(time.Hour).UnixNano(), 10)) != 0 {
		t.Fatal("a judged run is due again")
	}
	// The run goes on and finishes: recovered, and a restored state does
	// not judge it again.
	h.finish(r, stSucceeded, h.now)
	h.wantEvents("backup", "too_long", "recovered")
}

func TestTooShortBelowMinDurationOnly(t *testing.T) {
	h := alertHarness(t)
	h.create(alertJob("sync", &pb.Expect{MinDuration: durationpb.New(5 * time.Second)}, 0, "too_short", "recovered"))
	run := func(took time.Duration) {
		r := h.accepted(slotFire("sync", h.job("sync").GetGeneration(), h.nextSlot("sync"))).GetRun()
		c := done(r, stSucceeded, h.now)
		c.StartedAtUnixNano = c.GetFinishedAtUnixNano() - took.Nanoseconds()
		if !h.complete(c)[0].GetAccepted() {
			t.Fatal("completion refused")
		}
	}
	run(5 * time.Second)
	h.wantEvents("sync")
	run(5*time.Second - time.Nanosecond)
	got := h.wantEvents("sync", "too_short")
	if got[0].GetDurationMs() != 4999 {
		t.Fatalf("duration_ms %d, want 4999", got[0].GetDurationMs())
	}
	run(time.Second) // still too short: the same episode
	h.wantEvents("sync", "too_short")
	run(6 * time.Second)
	h.wantEvents("sync", "too_short", "recovered")
}

func TestNoSuccessAtSuccessWithinSinceTheLastSuccessOrChange(t *testing.T) {
	h := alertHarness(t)
	within := 25 * time.Hour
	h.create(alertJob("report", &pb.Expect{SuccessWithin: durationpb.New(within)}, 0, "no_success", "recovered"))
	check := &pb.AlertCheck{Job: "report", Event: "no_success"}
	base := h.job("report").GetUpdatedAt().AsTime()
	h.at(base.Add(within - time.Nanosecond))
	h.mustOK(checkCmd(1, check))
	h.wantEvents("report")
	h.at(base.Add(within))
	h.mustOK(checkCmd(1, check))
	h.mustOK(checkCmd(1, check))
	h.wantEvents("report", "no_success")
	ok := h.runOnce("report", stSucceeded)
	h.wantEvents("report", "no_success", "recovered")
	last := time.Unix(0, ok.GetFinishedAtUnixNano())
	h.at(last.Add(within - time.Nanosecond))
	h.mustOK(checkCmd(1, check))
	h.wantEvents("report", "no_success", "recovered")
	if due := fsm.NoSuccessDue(h.job("report"), h.status("report")); due != last.Add(within).UnixNano() {
		t.Fatalf("NoSuccessDue %d, want the last success + success_within %d", due, last.Add(within).UnixNano())
	}
}

func TestMissedButNotWhilePaused(t *testing.T) {
	h := alertHarness(t)
	h.create(alertJob("etl", nil, 0, "missed"))
	gen := h.job("etl").GetGeneration()
	slot := h.nextSlot("etl")
	h.fireAs(leaderID, leaderTerm, nil, []*pb.Miss{{Job: "etl", Generation: gen, FromSlotUnix: slot, ToSlotUnix: slot + 60, Count: 2, Reason: "catchup_window"}})
	got := h.wantEvents("etl", "missed")
	if got[0].GetReason() != "catchup_window" || got[0].GetSlotUnix() != slot {
		t.Fatalf("missed %v, want reason %s at slot %d", got[0], "catchup_window", slot)
	}
	h.mustOK(pauseCmd("etl", true, "maintenance"))
	h.missed(slotFire("etl", gen, h.nextSlot("etl")), fsm.ReasonPaused)
	h.wantEvents("etl", "missed")
}

func TestRemindersEveryRepeatWhileTheEpisodeStaysOpen(t *testing.T) {
	h := alertHarness(t)
	spec := alertJob("db", nil, 1, "failed")
	spec.Notify[0].Repeat = durationpb.New(4 * time.Hour)
	h.create(spec)
	h.runOnce("db", stFailed)
	page := h.wantEvents("db", "failed")[0]
	check := &pb.AlertCheck{Job: "db", Episode: page.GetEpisode(), Channel: "ops"}
	sent := time.Unix(0, page.GetAtUnixNano())
	h.at(sent.Add(4*time.Hour - time.Nanosecond))
	h.mustOK(checkCmd(1, check))
	h.wantEvents("db", "failed")
	h.at(sent.Add(4 * time.Hour))
	h.mustOK(checkCmd(1, check))
	h.mustOK(checkCmd(1, check))
	got := h.wantEvents("db", "failed", "failed")
	if got[1].GetReminder() != 1 || got[1].GetEpisode() != page.GetEpisode() || got[1].GetId() == page.GetId() {
		t.Fatalf("reminder %v, want reminder 1 of episode %s under its own id", got[1], page.GetEpisode())
	}
}

func TestRulesBySelectorAndPagerDutyResolves(t *testing.T) {
	h := newHarness(t)
	h.mustOK(putChannelCmd(&pb.Channel{Name: "pd", Pagerduty: &pb.PagerDutyChannel{RoutingKey: "k"}}))
	h.mustOK(putRuleCmd(&pb.NotifyRule{Name: "ops-jobs", Selector: map[string]string{"team": "ops"}, Channel: "pd", On: []string{"failed"}, AfterFailures: 1}))
	ops := testSpec("ops-job")
	ops.Labels = map[string]string{"team": "ops"}
	h.create(ops)
	other := testSpec("billing-job")
	other.Labels = map[string]string{"team": "billing"}
	h.create(other)
	h.runOnce("ops-job", stFailed)
	h.runOnce("billing-job", stFailed)
	h.wantEvents("billing-job")
	page := h.wantEvents("ops-job", "failed")[0]
	if page.GetLabels()["team"] != "ops" {
		t.Fatalf("alert labels %v, want the job's", page.GetLabels())
	}
	h.runOnce("ops-job", stSucceeded)
	got := h.wantEvents("ops-job", "failed", "recovered") // a PagerDuty incident always resolves
	if got[1].GetEpisode() != page.GetEpisode() || got[1].GetChannel() != "pd" {
		t.Fatalf("resolve %v, want episode %s on pd", got[1], page.GetEpisode())
	}
}

func TestDeliveriesAreRecordedUntilTheFirstAcknowledgement(t *testing.T) {
	h := alertHarness(t)
	h.create(alertJob("api", nil, 1, "failed"))
	h.runOnce("api", stFailed)
	id := h.wantEvents("api", "failed")[0].GetId()
	if p := h.f.PendingAlerts(); len(p) != 1 || p[0].GetId() != id {
		t.Fatalf("pending %v, want %s", p, id)
	}
	h.mustOK(deliveredCmd(id, false, false))
	h.mustOK(deliveredCmd(id, true, false))
	h.mustOK(deliveredCmd(id, false, true)) // late news of an older attempt
	a := h.alerts("api")[0]
	if a.GetDelivery() != pb.DeliveryState_DELIVERY_STATE_DELIVERED || a.GetAttemptCount() != 2 || len(a.GetAttempts()) != 2 {
		t.Fatalf("alert %v, want delivered after 2 attempts", a)
	}
	if len(h.f.PendingAlerts()) != 0 {
		t.Fatal("a delivered alert is still pending")
	}
}

func TestCheckAlertsOfAnotherTermChangeNothing(t *testing.T) {
	h := alertHarness(t)
	h.create(alertJob("report", &pb.Expect{SuccessWithin: durationpb.New(time.Hour)}, 0, "no_success"))
	h.at(h.job("report").GetUpdatedAt().AsTime().Add(2 * time.Hour))
	// The harness commits every entry but a FireBatch in term 1.
	res := h.mustOK(checkCmd(7, &pb.AlertCheck{Job: "report", Event: "no_success"}))
	if len(res.GetAlerts()) != 0 {
		t.Fatalf("a check committed in another term raised %v", res.GetAlerts())
	}
	h.wantEvents("report")
}

func TestAlertHistoryIsBounded(t *testing.T) {
	h := alertHarness(t)
	h.create(alertJob("flaky", nil, 1, "failed", "recovered"))
	for range 4 {
		h.runOnce("flaky", stFailed)
		h.runOnce("flaky", stSucceeded)
	}
	cmd := checkCmd(1)
	cmd.GetCheckAlerts().HistoryLimit = 3
	h.mustOK(cmd)
	got := h.alerts("flaky")
	if len(got) != 3 || got[2].GetSeq() != 8 {
		t.Fatalf("kept %d alerts ending at seq %d, want the newest 3 of 8", len(got), got[len(got)-1].GetSeq())
	}
}

func TestChannelAndRuleWritesAreScopedAndNoOpWhenEqual(t *testing.T) {
	h := newHarness(t)
	ch := webhook("team-hook")
	ch.Labels = map[string]string{"team": "ops"}
	r := h.mustOK(putChannelCmd(ch))
	if !r.GetCreated() || r.GetChannel().GetVersion() != 1 {
		t.Fatalf("first put %v", r)
	}
	if r := h.mustOK(putChannelCmd(ch)); r.GetChanged() {
		t.Fatal("an equal put changed the channel")
	}
	scoped := func(c *pb.Command) *pb.Command {
		c.Caller = &pb.Caller{Principal: "billing-ci", Selector: map[string]string{"team": "billing"}}
		return c
	}
	h.mustFail(scoped(putChannelCmd(ch)), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
	other := webhook("team-hook")
	other.Labels = map[string]string{"team": "billing"}
	h.mustFail(scoped(putChannelCmd(other)), pb.ResultCode_RESULT_CODE_ALREADY_EXISTS, fsm.ErrAlreadyExists)
	h.mustFail(scoped(&pb.Command{Kind: &pb.Command_DeleteChannel{DeleteChannel: &pb.DeleteChannelCommand{Name: "team-hook"}}}),
		pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
	h.mustFail(scoped(putRuleCmd(&pb.NotifyRule{Name: "all", Channel: "team-hook"})), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
	h.mustFail(putChannelCmd(&pb.Channel{Name: "two", Webhook: &pb.WebhookChannel{}, Slack: &pb.SlackChannel{}}),
		pb.ResultCode_RESULT_CODE_MALFORMED, fsm.ErrMalformed)
}

func TestAlertStateSurvivesASnapshot(t *testing.T) {
	h := alertHarness(t)
	h.mustOK(putRuleCmd(&pb.NotifyRule{Name: "all", Channel: "ops", On: []string{"failed"}}))
	h.create(alertJob("long", &pb.Expect{MaxDuration: durationpb.New(time.Minute)}, 1, "failed", "too_long"))
	h.runOnce("long", stFailed)
	r := h.accepted(slotFire("long", h.job("long").GetGeneration(), h.nextSlot("long"))).GetRun()
	c := newHarness(t)
	if err := restore(c.f, persist(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if c.f.StateHash() != h.f.StateHash() {
		t.Fatal("restored state hash differs")
	}
	at := r.GetCreatedAtUnixNano() + time.Minute.Nanoseconds()
	if got, want := c.f.TooLongDue(at, 10), h.f.TooLongDue(at, 10); len(got) != 1 || len(want) != 1 || got[0].GetRunId() != want[0].GetRunId() {
		t.Fatalf("restored too_long index %v, want %v", got, want)
	}
	if len(c.f.PendingAlerts()) != len(h.f.PendingAlerts()) || c.f.AlertsOpen() != 1 {
		t.Fatalf("restored pending %d (want %d), open episodes %d (want 1)", len(c.f.PendingAlerts()), len(h.f.PendingAlerts()), c.f.AlertsOpen())
	}
}
