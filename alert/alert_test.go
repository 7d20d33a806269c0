package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/mailtest"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// clock is a fake clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// fsmProposer commits commands to an FSM as a leader's own proposer does:
// as they are, stamped by whoever made them (the alerter stamps its own).
type fsmProposer struct {
	mu    sync.Mutex
	f     *fsm.FSM
	clock *clock
	index uint64
}

func (p *fsmProposer) Apply(_ context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	data, err := proto.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	p.index++
	res := p.f.Apply(&raft.Log{Index: p.index, Term: 1, Type: raft.LogCommand, Data: data})
	if err, ok := res.(error); ok {
		return nil, err
	}
	return res.(*pb.CommandResult), nil
}

func (p *fsmProposer) Barrier(context.Context) error { return nil }
func (p *fsmProposer) Term() uint64                  { return 1 }
func (p *fsmProposer) ID() string                    { return "n1" }

// harness is an FSM, an alerter's term over it, and a fake clock.
type harness struct {
	t     *testing.T
	f     *fsm.FSM
	clock *clock
	prop  *fsmProposer
	a     *Alerter
	term  *term
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, keys Keys) *harness {
	h := &harness{t: t, f: fsm.New(), clock: &clock{t: t0}}
	h.prop = &fsmProposer{f: h.f, clock: h.clock}
	h.mustOK(fsm.SetClusterVersion(fsm.CommandVersion))
	a, err := New(Config{State: h.f, Proposer: h.prop, Now: h.clock.Now, Keys: keys,
		Site: Site{Cluster: "test", UIBase: "http://ui.test:8001"}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h.a = a
	h.term = newTerm(a)
	h.term.term = 1
	return h
}

func (h *harness) mustOK(cmd *pb.Command) *pb.CommandResult {
	h.t.Helper()
	cmd.ProposedAtUnixNano = h.clock.Now().UnixNano()
	res, err := h.prop.Apply(context.Background(), cmd)
	if err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		h.t.Fatalf("%v: %v, %v", cmd, res, err)
	}
	return res
}

// step runs one pass of the term at the clock's time and waits for its
// sends, then records them.
func (h *harness) step() {
	h.term.step(h.clock.Now())
	h.term.sends.Wait()
	h.term.record()
}

func (h *harness) channel(ch *pb.Channel) {
	h.mustOK(&pb.Command{Kind: &pb.Command_PutChannel{PutChannel: &pb.PutChannelCommand{Channel: ch}}})
}

func (h *harness) job(spec *pb.JobSpec) *pb.Job {
	if spec.Schedule == "" {
		spec.Schedule = "*/5 * * * *"
	}
	if spec.Http == nil {
		spec.Http = &pb.HttpTarget{Url: "http://target.test/"}
	}
	return h.mustOK(&pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Spec: spec, Mode: pb.PutMode_PUT_MODE_UPSERT}}}).GetJob()
}

// fail fires the job's slot and fails the run.
func (h *harness) fail(name string, slot int64) {
	j, err := h.f.StoredJob(name)
	if err != nil {
		h.t.Fatal(err)
	}
	res := h.mustOK(&pb.Command{Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{LeaderId: "n1", Term: 1,
		Fires: []*pb.Fire{{Job: name, Generation: j.Job.GetGeneration(), SlotUnix: slot, Kind: pb.FireKind_FIRE_KIND_SCHEDULED}}}}})
	r := res.GetFires()[0].GetRun()
	now := h.clock.Now().UnixNano()
	h.mustOK(&pb.Command{Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{Completions: []*pb.Completion{{
		RunId: r.GetId(), Token: fsm.CurrentAttempt(r).GetToken(), Outcome: pb.RunState_RUN_STATE_FAILED,
		StartedAtUnixNano: now - int64(time.Second), FinishedAtUnixNano: now, Detail: "exit status 1", Output: []byte("boom\n"),
	}}}}})
}

func (h *harness) alerts() []*pb.Alert {
	all, _ := h.f.Alerts(fsm.AlertQuery{})
	slices.Reverse(all)
	return all
}

// receiver records what a webhook endpoint gets, answering with code().
type receiver struct {
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	urls    []string
	code    func(n int) int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.headers = append(r.headers, req.Header.Clone())
	r.urls = append(r.urls, "http://"+req.Host+req.URL.RequestURI())
	n := len(r.bodies)
	r.mu.Unlock()
	code := http.StatusNoContent
	if r.code != nil {
		code = r.code(n)
	}
	w.WriteHeader(code)
}

func (r *receiver) got() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

func TestWebhookNotificationIsSignedAndCarriesEveryField(t *testing.T) {
	keys, err := fence.NewKeys([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, keys)
	rec := &receiver{code: func(n int) int {
		if n < 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	h.channel(&pb.Channel{Name: "ops", Webhook: &pb.WebhookChannel{Url: srv.URL + "/hook", Headers: map[string]string{"X-Team": "ops"}}})
	h.job(&pb.JobSpec{Name: "billing", Labels: map[string]string{"team": "billing"}, Notify: []*pb.Notify{{Channel: "ops", On: []string{"failed"}, AfterFailures: 1}}})
	h.fail("billing", t0.Unix()+300)

	h.step()
	if rec.got() != 1 {
		t.Fatalf("%d sends after the first pass, want 1", rec.got())
	}
	// Retried after the backoff, not before: 1 s, then 2 s.
	h.clock.set(t0.Add(999 * time.Millisecond))
	h.step()
	if rec.got() != 1 {
		t.Fatalf("resent before its backoff: %d sends", rec.got())
	}
	h.clock.set(t0.Add(time.Second))
	h.step()
	h.clock.set(t0.Add(3 * time.Second))
	h.step()
	if rec.got() != 3 {
		t.Fatalf("%d sends, want 3", rec.got())
	}
	a := h.alerts()[0]
	if a.GetDelivery() != pb.DeliveryState_DELIVERY_STATE_DELIVERED || a.GetAttemptCount() != 3 ||
		!strings.HasPrefix(a.GetAttempts()[0].GetAnswer(), "503") {
		t.Fatalf("alert after delivery %v", a)
	}
	h.clock.set(t0.Add(time.Hour))
	h.step()
	if rec.got() != 3 {
		t.Fatal("a delivered alert was sent again")
	}

	var body map[string]any
	if err := json.Unmarshal(rec.bodies[2], &body); err != nil {
		t.Fatal(err)
	}
	want := []string{"id", "event", "episode", "job", "labels", "run_id", "slot", "token", "outcome", "reason",
		"consecutive_failures", "duration_ms", "output_tail", "time", "cluster", "link"}
	keysGot := make([]string, 0, len(body))
	for k := range body {
		keysGot = append(keysGot, k)
	}
	slices.Sort(keysGot)
	slices.Sort(want)
	if !slices.Equal(keysGot, want) {
		t.Fatalf("body fields %v, want exactly %v", keysGot, want)
	}
	if body["id"] != a.GetId() || body["event"] != "failed" || body["outcome"] != "failed" || body["job"] != "billing" ||
		body["output_tail"] != "boom\n" || body["cluster"] != "test" || !strings.HasPrefix(body["link"].(string), "http://ui.test:8001/ui/#/jobs/billing") {
		t.Fatalf("body %v", body)
	}
	hd := rec.headers[2]
	if hd.Get(HeaderNotificationID) != a.GetId() || hd.Get("X-Team") != "ops" {
		t.Fatalf("headers %v", hd)
	}
	for i := range rec.bodies {
		if rec.headers[i].Get(HeaderNotificationID) != a.GetId() {
			t.Fatalf("attempt %d carries id %q, want %q", i+1, rec.headers[i].Get(HeaderNotificationID), a.GetId())
		}
	}
	run := NotificationRun(a, 3)
	if err := keys.VerifyV2(fence.HTTPDispatch(run, http.MethodPost, rec.urls[2], rec.bodies[2]), hd.Get(fence.HeaderSignature)); err != nil {
		t.Fatalf("signature: %v", err)
	}
}

func TestPagerDutyTriggersAndResolvesOneDedupKey(t *testing.T) {
	h := newHarness(t, nil)
	rec := &receiver{code: func(int) int { return http.StatusAccepted }}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	h.channel(&pb.Channel{Name: "pd", Pagerduty: &pb.PagerDutyChannel{RoutingKey: "rk", Url: srv.URL}})
	h.job(&pb.JobSpec{Name: "db", Notify: []*pb.Notify{{Channel: "pd", On: []string{"failed"}, AfterFailures: 1}}})
	h.fail("db", t0.Unix()+300)
	h.step()
	// A success closes the episode: resolve.
	j, _ := h.f.StoredJob("db")
	res := h.mustOK(&pb.Command{Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{LeaderId: "n1", Term: 1,
		Fires: []*pb.Fire{{Job: "db", Generation: j.Job.GetGeneration(), SlotUnix: t0.Unix() + 600, Kind: pb.FireKind_FIRE_KIND_SCHEDULED}}}}})
	r := res.GetFires()[0].GetRun()
	h.mustOK(&pb.Command{Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{Completions: []*pb.Completion{{
		RunId: r.GetId(), Token: fsm.CurrentAttempt(r).GetToken(), Outcome: pb.RunState_RUN_STATE_SUCCEEDED,
		StartedAtUnixNano: t0.UnixNano(), FinishedAtUnixNano: t0.UnixNano() + 1,
	}}}}})
	h.step()
	if rec.got() != 2 {
		t.Fatalf("%d events, want trigger and resolve", rec.got())
	}
	var events []map[string]any
	for _, b := range rec.bodies {
		var ev map[string]any
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	if events[0]["event_action"] != "trigger" || events[1]["event_action"] != "resolve" ||
		events[0]["dedup_key"] != events[1]["dedup_key"] || events[0]["routing_key"] != "rk" {
		t.Fatalf("events %v", events)
	}
}

func TestEmailGoesOverSTARTTLSWithALogin(t *testing.T) {
	mail := mailtest.Start(t, "cron", "s3cret")
	h := newHarness(t, nil)
	h.a.send.roots = mail.Roots
	h.channel(&pb.Channel{Name: "mail", Email: &pb.EmailChannel{Smtp: mail.Addr, From: "cron@example.org",
		To: []string{"ops@example.org"}, Username: "cron", Password: "s3cret", Starttls: true}})
	h.job(&pb.JobSpec{Name: "backup", Notify: []*pb.Notify{{Channel: "mail", On: []string{"failed"}, AfterFailures: 1}}})
	h.fail("backup", t0.Unix()+300)
	h.step()
	mails := mail.Mails()
	a := h.alerts()[0]
	if len(mails) != 1 || !mails[0].TLS || mails[0].User != "cron" || !strings.Contains(string(mails[0].Data), a.GetId()) ||
		a.GetDelivery() != pb.DeliveryState_DELIVERY_STATE_DELIVERED {
		t.Fatalf("mails %+v, alert %v", mails, a)
	}
	// A refused login is the server's answer, code and all.
	h.channel(&pb.Channel{Name: "mail", Email: &pb.EmailChannel{Smtp: mail.Addr, From: "cron@example.org",
		To: []string{"ops@example.org"}, Username: "cron", Password: "wrong", Starttls: true}})
	res := h.a.sendOne(context.Background(), a, 2)
	if res.OK || res.Status < 400 || !strings.Contains(res.Answer, "bad login") {
		t.Fatalf("a wrong password: %+v", res)
	}
}

func TestLateTimerChecksExactlyAtStartWithin(t *testing.T) {
	h := newHarness(t, nil)
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	h.channel(&pb.Channel{Name: "ops", Webhook: &pb.WebhookChannel{Url: srv.URL}})
	within := 2 * time.Minute
	h.job(&pb.JobSpec{Name: "nightly", Schedule: "0 2 * * *", Expect: &pb.Expect{StartWithin: durationpb.New(within)},
		Notify: []*pb.Notify{{Channel: "ops", On: []string{"late"}}}})
	slot := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	h.clock.set(slot.Add(within))
	h.step()
	if len(h.alerts()) != 0 {
		t.Fatalf("late at slot + start_within: %v", h.alerts())
	}
	h.clock.set(slot.Add(within + time.Nanosecond))
	h.step()
	got := h.alerts()
	if len(got) != 1 || got[0].GetEvent() != "late" || got[0].GetSlotUnix() != slot.Unix() || rec.got() != 1 {
		t.Fatalf("alerts %v, sends %d, want one late for %v", got, rec.got(), slot)
	}
	h.clock.set(slot.Add(time.Hour))
	h.step()
	if len(h.alerts()) != 1 {
		t.Fatal("the slot was judged late twice")
	}
}

// success_within is real elapsed time, not wall-clock days: around the
// DST changes of Europe/Berlin a daily 02:30 job's slots are 23 h and 25 h
// apart, and with success_within 24h30m only the 25 h gap trips it.
func TestSuccessWithinCountsRealTimeAcrossDST(t *testing.T) {
	h := newHarness(t, nil)
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	h.channel(&pb.Channel{Name: "ops", Webhook: &pb.WebhookChannel{Url: srv.URL}})
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	h.clock.set(time.Date(2026, 3, 27, 3, 0, 0, 0, berlin))
	h.job(&pb.JobSpec{Name: "report", Schedule: "30 3 * * *", Timezone: "Europe/Berlin", Expect: &pb.Expect{SuccessWithin: durationpb.New(24*time.Hour + 30*time.Minute)},
		Notify: []*pb.Notify{{Channel: "ops", On: []string{"no_success", "recovered"}}}})
	succeed := func(at time.Time) {
		h.clock.set(at)
		j, _ := h.f.StoredJob("report")
		res := h.mustOK(&pb.Command{Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{LeaderId: "n1", Term: 1,
			Fires: []*pb.Fire{{Job: "report", Generation: j.Job.GetGeneration(), SlotUnix: at.Unix(), Kind: pb.FireKind_FIRE_KIND_SCHEDULED}}}}})
		r := res.GetFires()[0].GetRun()
		h.mustOK(&pb.Command{Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{Completions: []*pb.Completion{{
			RunId: r.GetId(), Token: fsm.CurrentAttempt(r).GetToken(), Outcome: pb.RunState_RUN_STATE_SUCCEEDED,
			StartedAtUnixNano: at.UnixNano(), FinishedAtUnixNano: at.UnixNano(),
		}}}}})
	}
	// Walk the evaluations minute by minute over the spring-forward night
	// (29 March, 23 h between the runs) and the fall-back night (25
	// October, 25 h).
	walk := func(from, to time.Time) {
		for at := from; !at.After(to); at = at.Add(time.Minute) {
			h.clock.set(at)
			h.step()
		}
	}
	succeed(time.Date(2026, 3, 28, 3, 30, 0, 0, berlin))
	walk(time.Date(2026, 3, 28, 3, 31, 0, 0, berlin), time.Date(2026, 3, 29, 3, 29, 0, 0, berlin))
	succeed(time.Date(2026, 3, 29, 3, 30, 0, 0, berlin))
	if n := len(h.alerts()); n != 0 {
		t.Fatalf("no_success over the 23 h night: %v", h.alerts())
	}
	succeed(time.Date(2026, 10, 24, 3, 30, 0, 0, berlin))
	next := time.Date(2026, 10, 25, 3, 30, 0, 0, berlin)
	if gap := next.Sub(time.Date(2026, 10, 24, 3, 30, 0, 0, berlin)); gap != 25*time.Hour {
		t.Fatalf("the fall-back gap is %v", gap)
	}
	walk(time.Date(2026, 10, 24, 3, 31, 0, 0, berlin), next.Add(-time.Minute))
	got := h.alerts()
	if len(got) != 1 || got[0].GetEvent() != "no_success" {
		t.Fatalf("alerts over the 25 h night: %v, want one no_success", got)
	}
	if at := time.Unix(0, got[0].GetAtUnixNano()); at.Before(time.Date(2026, 10, 24, 3, 30, 0, 0, berlin).Add(24*time.Hour + 30*time.Minute)) {
		t.Fatalf("no_success raised at %v, before success_within passed", at)
	}
	succeed(next)
	if got := h.alerts(); len(got) != 2 || got[1].GetEvent() != "recovered" {
		t.Fatalf("alerts after the next success: %v", got)
	}
}

// A check-in job's start_within is its pings' grace: the timers plan no
// late deadline for it, though its rule asks for late, and they still
// plan its no_success.
func TestNoLateTimerForACheckinJob(t *testing.T) {
	spec := &pb.JobSpec{Name: "nightly", Schedule: "0 2 * * *", Checkin: &pb.CheckinTarget{},
		Expect: &pb.Expect{StartWithin: durationpb.New(time.Minute), SuccessWithin: durationpb.New(25 * time.Hour)},
		Notify: []*pb.Notify{{Channel: "ops", On: []string{"late", "no_success"}}}}
	p := newPlans()
	p.plan(fsm.StoredJob{Job: &pb.Job{Spec: spec}, Status: &pb.JobStatus{}}, nil)
	if len(p.items) != 1 || p.items[0].event != "no_success" {
		t.Fatalf("plans of a check-in job: %+v, want its no_success only", p.items)
	}
	spec.Checkin, spec.Http = nil, &pb.HttpTarget{Url: "http://target.test/"}
	p.plan(fsm.StoredJob{Job: &pb.Job{Spec: spec}, Status: &pb.JobStatus{}}, nil)
	if len(p.items) != 3 {
		t.Fatalf("plans of the job with a target: %+v, want its late deadline too", p.items)
	}
}

// TestIdleTermKeepsNoJobNames: with no channel nothing plans the jobs a
// write marks, so a pass forgets them, and the first pass with a channel
// plans every job instead.
func TestIdleTermKeepsNoJobNames(t *testing.T) {
	h := newHarness(t, nil)
	h.term.rescan = false // as after a first pass
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("job-%d", i)
	}
	h.term.markDirty(false, names)
	h.step()
	h.term.mu.Lock()
	dirty, rescan := len(h.term.dirty), h.term.rescan
	h.term.mu.Unlock()
	if dirty != 0 || !rescan {
		t.Fatalf("after a pass without a channel: %d jobs marked, rescan %v; want none, and a rescan", dirty, rescan)
	}
}
