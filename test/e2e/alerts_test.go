//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/mailtest"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// alertTimeout bounds each wait of the alert scenarios.
const alertTimeout = 30 * time.Second

// hookReceiver is a webhook receiver that dedupes on the notification id,
// as docs/operations.md tells receivers to: it counts every request and
// every distinct id, and answers 503 until it is opened.
type hookReceiver struct {
	open atomic.Bool

	mu       sync.Mutex
	requests int
	byID     map[string]map[string]any
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	h.mu.Lock()
	h.requests++
	if h.open.Load() {
		if h.byID == nil {
			h.byID = map[string]map[string]any{}
		}
		if id := r.Header.Get("X-Raftcron-Notification-Id"); id != "" && id == body["id"] {
			h.byID[id] = body
		}
	}
	h.mu.Unlock()
	if !h.open.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ids are the distinct notification ids taken, with their events.
func (h *hookReceiver) ids() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for id, b := range h.byID {
		out[id], _ = b["event"].(string)
	}
	return out
}

// pagerReceiver records PagerDuty events.
type pagerReceiver struct {
	mu     sync.Mutex
	events []map[string]any
}

func (p *pagerReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev map[string]any
	if err := json.NewDecoder(r.Body).Decode(&ev); err == nil {
		p.mu.Lock()
		p.events = append(p.events, ev)
		p.mu.Unlock()
	}
	w.WriteHeader(http.StatusAccepted)
}

func (p *pagerReceiver) got() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events)
}

// alertWorld is a cluster with its receivers: a webhook, a PagerDuty and
// an SMTP server, and a target whose answer the test switches.
type alertWorld struct {
	t      *testing.T
	c      *cluster
	hook   *hookReceiver
	pager  *pagerReceiver
	mail   *mailtest.Server
	urls   map[string]string
	failOK atomic.Bool
}

// serve runs h on a listener the nodes reach and returns its URL.
func serveOn(t *testing.T, nw network, h http.Handler) string {
	t.Helper()
	ln, err := nw.Listen()
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

func newAlertWorld(t *testing.T, name string, bin string, failpoints ...string) *alertWorld {
	dir := workdir(t, name)
	nw, err := newNetwork(3)
	if err != nil {
		t.Fatalf("network: %v", err)
	}
	w := &alertWorld{t: t, hook: &hookReceiver{}, pager: &pagerReceiver{}, urls: map[string]string{}}
	ln, err := nw.Listen()
	if err != nil {
		t.Fatal(err)
	}
	w.mail = mailtest.Serve(t, ln, "cron", "mail-pass")
	w.urls["hook"] = serveOn(t, nw, w.hook)
	w.urls["pager"] = serveOn(t, nw, w.pager)
	w.urls["target"] = serveOn(t, nw, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sleep":
			time.Sleep(5 * time.Second)
		case "/flaky":
			if !w.failOK.Load() {
				rw.WriteHeader(http.StatusInternalServerError)
				return
			}
		}
		rw.WriteHeader(http.StatusOK)
	}))
	env := func(int, string) []string {
		// The nodes trust the SMTP server's certificate (its STARTTLS).
		env := []string{"SSL_CERT_FILE=" + w.mail.CAFile}
		if len(failpoints) > 0 {
			env = append(env, "RAFTCRON_FAILPOINTS="+strings.Join(failpoints, ","))
		}
		return env
	}
	w.c = newCluster(t, dir, nw, clusterOptions{nodes: 3, bin: bin, env: env})
	w.c.waitClusterVersion(fsm.AlertsVersion)
	return w
}

func (w *alertWorld) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	w.t.Cleanup(cancel)
	return ctx
}

// channels applies the test's channels through a node that may not lead.
func (w *alertWorld) channels(via *node) {
	cs := pb.NewChannelServiceClient(w.c.client(via))
	for _, ch := range []*pb.Channel{
		{Name: "hook", Webhook: &pb.WebhookChannel{Url: w.urls["hook"] + "/alerts"}},
		{Name: "pager", Pagerduty: &pb.PagerDutyChannel{RoutingKey: "routing-key", Url: w.urls["pager"] + "/v2/enqueue"}},
		{Name: "mail", Email: &pb.EmailChannel{Smtp: w.mail.Addr, From: "cron@example.org", To: []string{"ops@example.org"},
			Username: "cron", Password: "mail-pass", Starttls: true}},
	} {
		if _, err := cs.ApplyChannel(w.ctx(), &pb.ApplyChannelRequest{Channel: ch}); err != nil {
			w.t.Fatalf("channel %s: %v", ch.GetName(), err)
		}
	}
}

func (w *alertWorld) job(via *node, spec *pb.JobSpec) {
	if _, err := w.c.jobs(via).ApplyJob(w.ctx(), &pb.ApplyJobRequest{Spec: spec}); err != nil {
		w.t.Fatalf("job %s: %v", spec.GetName(), err)
	}
}

// alerts are the alerts committed, as the leader lists them.
func (w *alertWorld) alerts() []*pb.Alert {
	resp, err := pb.NewAlertServiceClient(w.c.client(w.c.leader())).ListAlerts(w.ctx(), &pb.ListAlertsRequest{Limit: 1000})
	if err != nil {
		w.t.Logf("ListAlerts: %v", err)
		return nil
	}
	out := resp.GetAlerts()
	slices.Reverse(out)
	return out
}

// waitAlert waits until an alert of job and event to channel is
// committed and returns it.
func (w *alertWorld) waitAlert(job, event, channel string, delivered bool) *pb.Alert {
	w.t.Helper()
	var found *pb.Alert
	testutil.WaitFor(w.t, alertTimeout, fmt.Sprintf("a %s alert of %s to %s (delivered: %v)", event, job, channel, delivered), func() bool {
		for _, a := range w.alerts() {
			if a.GetJob() == job && a.GetEvent() == event && a.GetChannel() == channel &&
				(!delivered || a.GetDelivery() == pb.DeliveryState_DELIVERY_STATE_DELIVERED) && (delivered || a.GetAttemptCount() > 0) {
				found = a
				return true
			}
		}
		return false
	})
	return found
}

// checkAlerts is the alerts' checker: no event committed twice (one page
// per episode and channel, one recovered per episode and channel, no
// reminder twice), and the receiver took exactly the ids committed for its
// channel. It returns every violation.
func checkAlerts(committed []*pb.Alert, received map[string]string) []string {
	var out []string
	seen := map[string]string{}
	ids := map[string]bool{}
	for _, a := range committed {
		key := fmt.Sprintf("%s/%s/%s/%s/%d", a.GetJob(), a.GetEpisode(), a.GetChannel(), a.GetEvent(), a.GetReminder())
		if prev, ok := seen[key]; ok {
			out = append(out, fmt.Sprintf("%s committed twice: %s and %s", key, prev, a.GetId()))
		}
		seen[key] = a.GetId()
		if ids[a.GetId()] {
			out = append(out, "id "+a.GetId()+" committed twice")
		}
		ids[a.GetId()] = true
	}
	for id := range received {
		if !ids[id] {
			out = append(out, "the receiver took "+id+", which was never committed")
		}
	}
	for _, a := range committed {
		if a.GetChannel() == "hook" && received[a.GetId()] == "" {
			out = append(out, "the receiver never took committed alert "+a.GetId())
		}
	}
	slices.Sort(out)
	return out
}

// TestAlerts3: alerts are committed before they are sent and paged once
// per episode through a leader SIGKILLed and another paused between the
// failure and the delivery; a run past max_duration is too_long once; a
// check-in job whose pings stop pages missed once and recovered once, and
// `raftcron checkin NAME -- false` exits 1 and pages failed; an email
// reaches an SMTP server over STARTTLS; PagerDuty gets trigger then
// resolve under one dedup_key.
func TestAlerts3(t *testing.T) {
	w := newAlertWorld(t, "alerts3", plainBinary.get(t))
	c := w.c
	leader := c.leader()
	follower := c.running()[0]
	if follower == leader {
		follower = c.running()[1]
	}
	w.channels(follower)
	w.job(follower, &pb.JobSpec{Name: "flaky", Schedule: "@every 1s", Http: &pb.HttpTarget{Url: w.urls["target"] + "/flaky"},
		Notify: []*pb.Notify{
			{Channel: "hook", On: []string{"failed", "recovered"}, AfterFailures: 2},
			{Channel: "pager", On: []string{"failed"}, AfterFailures: 2},
			{Channel: "mail", On: []string{"failed"}, AfterFailures: 2},
		}})
	w.job(follower, &pb.JobSpec{Name: "sleepy", Schedule: "0 0 1 1 *", Http: &pb.HttpTarget{Url: w.urls["target"] + "/sleep"},
		Expect: &pb.Expect{MaxDuration: durationpb.New(2 * time.Second)},
		Notify: []*pb.Notify{{Channel: "hook", On: []string{"too_long"}}}})

	// The failed page is committed, and the receiver refuses it: the
	// leader dies, the next one is paused past an election, and the third
	// delivers it once the receiver opens.
	page := w.waitAlert("flaky", "failed", "hook", false)
	if page.GetConsecutiveFailures() != 2 {
		t.Fatalf("failed paged after %d failures, want 2", page.GetConsecutiveFailures())
	}
	c.event("kill", []*node{leader}, "leader, with the failed alert committed and not delivered")
	c.kill(leader)
	second := c.waitNewLeader(leader)
	c.restart(leader)
	c.waitReady(leader)
	c.event("pause", []*node{second}, "the new leader, past an election")
	c.pause(second)
	third := c.waitNewLeader(second)
	c.resume(second)
	c.event("resume", []*node{second}, "leader now "+third.ID)
	w.hook.open.Store(true)
	w.waitAlert("flaky", "failed", "hook", true)
	w.waitAlert("flaky", "failed", "pager", true)
	w.waitAlert("flaky", "failed", "mail", true)

	// Recovery: one recovered, PagerDuty resolves (its incident must).
	w.failOK.Store(true)
	w.waitAlert("flaky", "recovered", "hook", true)
	w.waitAlert("flaky", "recovered", "pager", true)

	// A run sleeping past max_duration: too_long, once.
	if _, err := c.jobs(c.leader()).TriggerJob(w.ctx(), &pb.TriggerJobRequest{Name: "sleepy"}); err != nil {
		t.Fatal(err)
	}
	w.waitAlert("sleepy", "too_long", "hook", true)

	// Check-ins: a job whose pings stop pages one missed for the episode
	// (every missed slot in the ledger) and one recovered when they
	// resume; `raftcron checkin NAME -- false` exits 1 and pages failed.
	w.checkinPart()
	w.checkinFalse(plainBinary.get(t))

	// Let the sleeping run finish and every delivery settle.
	testutil.WaitFor(t, alertTimeout, "every alert delivered", func() bool {
		for _, a := range w.alerts() {
			if a.GetDelivery() != pb.DeliveryState_DELIVERY_STATE_DELIVERED {
				return false
			}
		}
		return true
	})
	committed := w.alerts()
	if v := checkAlerts(committed, w.hook.ids()); len(v) > 0 {
		t.Fatalf("alert checker: %s", strings.Join(v, "; "))
	}
	count := map[string]int{}
	for _, a := range committed {
		count[a.GetJob()+" "+a.GetEvent()+" "+a.GetChannel()]++
	}
	for key, n := range map[string]int{
		"flaky failed hook": 1, "flaky failed pager": 1, "flaky failed mail": 1,
		"flaky recovered hook": 1, "flaky recovered pager": 1, "sleepy too_long hook": 1,
		"pulse missed hook": 1, "pulse recovered hook": 1, "cronbox failed hook": 1,
	} {
		if count[key] != n {
			t.Errorf("%s: %d alerts committed, want %d (all: %v)", key, count[key], n, count)
		}
	}
	if len(count) != 9 {
		t.Errorf("alerts committed: %v, want exactly the nine above", count)
	}
	toHook := 0
	for _, a := range committed {
		if a.GetChannel() == "hook" {
			toHook++
		}
	}
	if n := len(w.hook.ids()); n != toHook {
		t.Errorf("the receiver took %d distinct ids, want the %d committed for it", n, toHook)
	}

	evs := w.pager.got()
	if len(evs) < 2 || evs[0]["event_action"] != "trigger" || evs[len(evs)-1]["event_action"] != "resolve" {
		t.Fatalf("PagerDuty got %v, want trigger then resolve", evs)
	}
	for _, ev := range evs {
		if ev["dedup_key"] != page.GetEpisode() {
			t.Fatalf("PagerDuty event %v, want dedup_key %s", ev, page.GetEpisode())
		}
	}
	mails := w.mail.Mails()
	if len(mails) == 0 || !mails[0].TLS || mails[0].User != "cron" {
		t.Fatalf("mails %+v, want one over STARTTLS after a login", mails)
	}
	for _, m := range mails {
		if !strings.Contains(string(m.Data), "X-Raftcron-Notification-Id: ") || !strings.Contains(string(m.Data), "event: failed") {
			t.Fatalf("mail %s", m.Data)
		}
	}
}

// TestControlAlertSendTwice: a leader that sends notifications under ids
// the log never committed (failpoint alert-send-twice, as a leader that
// derives an event again would): the checker must find them.
func TestControlAlertSendTwice(t *testing.T) {
	w := newAlertWorld(t, "control-alert-send-twice", failpointsBinary.get(t), "alert-send-twice")
	w.hook.open.Store(true)
	leader := w.c.leader()
	w.channels(leader)
	w.job(leader, &pb.JobSpec{Name: "flaky", Schedule: "@every 1s", Http: &pb.HttpTarget{Url: w.urls["target"] + "/flaky"},
		Notify: []*pb.Notify{{Channel: "hook", On: []string{"failed"}, AfterFailures: 1}}})
	w.waitAlert("flaky", "failed", "hook", true)
	v := checkAlerts(w.alerts(), w.hook.ids())
	if len(v) == 0 || !strings.Contains(strings.Join(v, "; "), "never committed") {
		t.Fatalf("the checker found %v in a build that sends uncommitted ids, want a violation", v)
	}
	t.Logf("the checker reports, as it must: %s", strings.Join(v, "; "))
}
