package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	opsSecret    = "s3cret-ops"
	viewerSecret = "s3cret-viewer"
)

func aclTokens() map[string]fakeToken {
	return map[string]fakeToken{
		opsSecret:    {name: "ops", role: "management"},
		viewerSecret: {name: "viewer", role: "read"},
	}
}

func billingSpec() *pb.JobSpec {
	return &pb.JobSpec{
		Name: "billing", Schedule: "0 2 * * *", Timezone: "Europe/Berlin",
		Http:     &pb.HttpTarget{Url: "http://billing.internal/run", Timeout: durationpb.New(30e9)},
		Catchup:  &pb.Catchup{Window: durationpb.New(600e9), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
		Overlap:  pb.Overlap_OVERLAP_SKIP,
		Delivery: pb.Delivery_DELIVERY_AT_LEAST_ONCE,
		Labels:   map[string]string{"team": "billing"},
	}
}

const (
	scheduled  = pb.FireKind_FIRE_KIND_SCHEDULED
	succeeded  = pb.RunState_RUN_STATE_SUCCEEDED
	failed     = pb.RunState_RUN_STATE_FAILED
	dispatched = pb.RunState_RUN_STATE_DISPATCHED
)

// signIn opens the UI and signs in with secret.
func signIn(t *testing.T, ctx context.Context, url, secret, name string) {
	t.Helper()
	run(t, ctx,
		chromedp.Navigate(url+"/ui/"),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", secret+kb.Enter, chromedp.ByQuery),
		waitText("header .who", name),
	)
}

// goTo opens a page of the signed-in UI by its hash route.
func goTo(route string) chromedp.Action {
	return chromedp.Evaluate(`location.hash = `+jsString(route), nil)
}

// TestBrowserOperator walks an operator through the UI of a cluster with
// ACLs on: sign in, watch a job fire, pause it with a note, trigger it,
// cancel the stuck run, and read all of it back in the audit trail.
func TestBrowserOperator(t *testing.T) {
	chromiumPath(t)
	node := newFakeNode(t, aclTokens())
	node.apply(billingSpec())
	node.fire("billing", scheduled, succeeded)
	node.fire("billing", scheduled, failed)
	node.fire("billing", scheduled, succeeded)
	ctx := newBrowser(t, desktop)

	signIn(t, ctx, node.url, opsSecret, "ops")
	var href, stored string
	run(t, ctx,
		chromedp.Evaluate(`location.href`, &href),
		chromedp.Evaluate(`sessionStorage.getItem("raftcron.token")`, &stored),
	)
	if strings.Contains(href, opsSecret) || stored != opsSecret {
		t.Fatalf("the token belongs in session storage and never in the URL: href %q, stored %q", href, stored)
	}

	// The overview counts what fired; the fencing counter is the node's.
	// A node the leader cannot reach is marked so.
	run(t, ctx, waitText(".stats", "#3"), waitText(".stat.bad dd", "1"),
		waitText("table.nodes tbody tr:nth-child(3) .badge.bad", "unreachable"))
	screenshot(t, ctx, desktop, "overview")

	// A firing job with its tokens: a new fire arrives without a reload.
	run(t, ctx, goTo("#/jobs"), waitText("table.jobs", "billing"), waitText("table.jobs", "#3"))
	node.fire("billing", scheduled, succeeded)
	run(t, ctx, waitText("table.jobs tbody", "#4"))
	if got := text(t, ctx, "table.jobs tbody"); !strings.Contains(got, "at 02:00, every day") || !strings.Contains(got, "Europe/Berlin") {
		t.Errorf("jobs table shows the schedule in words and the zone; got %q", got)
	}
	screenshot(t, ctx, desktop, "jobs")

	// Pause with a note, from the keyboard: the dialog takes the focus.
	run(t, ctx,
		chromedp.Click(`a[href="#/jobs/billing"]`, chromedp.ByQuery),
		waitText("#job-title", "billing"),
		waitText("table.ledger", "#4"),
		clickButton("Pause…"),
		chromedp.WaitVisible("#pause-note", chromedp.ByQuery),
	)
	var focused string
	run(t, ctx, chromedp.Evaluate(`document.activeElement.id`, &focused))
	if focused != "pause-note" {
		t.Errorf("the pause dialog focuses its note field; focus is on %q", focused)
	}
	run(t, ctx,
		chromedp.SendKeys("#pause-note", "waiting for the invoice fix"+kb.Enter, chromedp.ByQuery),
		waitText(".note", "Paused: waiting for the invoice fix"),
	)
	if got := text(t, ctx, "ol.fires"); !strings.Contains(got, "DST GMT+01:00 → GMT+02:00") {
		t.Errorf("the next fires mark the spring-forward in Europe/Berlin; got %q", got)
	}
	// The spec reads as the API gives it: the job file's JSON form.
	if got := text(t, ctx, "pre.spec"); !strings.Contains(got, `"overlap": "skip"`) || !strings.Contains(got, `"window": "10m0s"`) {
		t.Errorf("the spec shows the job file's form (overlap skip, window 10m0s); got %q", got)
	}

	// Trigger the paused job once: its run arrives in the ledger.
	run(t, ctx,
		clickButton("Trigger once"),
		waitText(".toolbar .status", "Triggered run billing-5 with token #5"),
		waitText("table.ledger", "billing-5"),
	)
	screenshot(t, ctx, desktop, "job")

	// The runs page is live: a run the scheduler commits shows up as it is
	// committed; the triggered run hangs, and is cancelled from here.
	run(t, ctx, goTo("#/runs"), waitText("h1 .live", "live"), waitText("table.runs", "billing-5"))
	before := boxes(t, ctx)
	node.fire("billing", scheduled, succeeded)
	run(t, ctx, waitText("table.runs tbody", "billing-6"), settled)
	if after := boxes(t, ctx); after != before {
		t.Errorf("a live run moved the page around the runs table: %s, then %s", before, after)
	}
	// A worker's progress shows on the run in flight as it is committed.
	node.progress("billing-5", 40, "charged 400 of 1000 cards")
	run(t, ctx, waitText("table.runs tbody", "40% charged 400 of 1000 cards"))
	run(t, ctx,
		chromedp.Click(`button[aria-label="Cancel run billing-5"]`, chromedp.ByQuery),
		clickButton("Cancel run"),
		chromedp.WaitNotPresent(`button[aria-label="Cancel run billing-5"]`, chromedp.ByQuery),
		waitText("table.runs tbody", "cancel_requested"),
	)
	screenshot(t, ctx, desktop, "runs")

	// The audit trail names the operator for each change.
	run(t, ctx, goTo("#/audit"), waitText("table.audit", "cancel"))
	audit := text(t, ctx, "table.audit tbody")
	for _, want := range []string{"pause", "waiting for the invoice fix", "trigger", "billing-5", "cancel", "ops"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit trail lacks %q:\n%s", want, audit)
		}
	}
	screenshot(t, ctx, desktop, "audit")
}

// boxes is where the filters and the runs table's box are: a live run
// lands inside the box and must move neither.
func boxes(t *testing.T, ctx context.Context) string {
	t.Helper()
	var s string
	run(t, ctx, chromedp.Evaluate(`[".filters", ".scroll.tall"].map((q) => {
		const r = document.querySelector(q).getBoundingClientRect();
		return q + " " + [r.x, r.y, r.width, r.height].join(",");
	}).join("; ")`, &s))
	return s
}

// TestBrowserReadRole: a token with the read role sees the jobs and runs
// but no action it may not take, and no audit trail.
func TestBrowserReadRole(t *testing.T) {
	chromiumPath(t)
	node := newFakeNode(t, aclTokens())
	node.apply(billingSpec())
	node.fire("billing", scheduled, dispatched)
	ctx := newBrowser(t, desktop)

	signIn(t, ctx, node.url, viewerSecret, "viewer")
	run(t, ctx, goTo("#/jobs/billing"), waitText("table.ledger", "#1"))
	if n := count(t, ctx, ".toolbar"); n != 0 {
		t.Errorf("read role: job actions shown (%d toolbars)", n)
	}
	run(t, ctx, goTo("#/runs"), waitText("table.runs", "billing-1"))
	if n := count(t, ctx, "table.runs button"); n != 0 {
		t.Errorf("read role: %d cancel buttons shown", n)
	}
	if n := count(t, ctx, `nav a[href="#/audit"]`); n != 0 {
		t.Error("read role: the audit link is shown")
	}
}

// TestBrowserSignInRefusesUnknownToken: a wrong token is refused with the
// node's reason and nothing is stored.
func TestBrowserSignInRefusesUnknownToken(t *testing.T) {
	chromiumPath(t)
	node := newFakeNode(t, aclTokens())
	ctx := newBrowser(t, desktop)
	run(t, ctx,
		chromedp.Navigate(node.url+"/ui/"),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", "wrong"+kb.Enter, chromedp.ByQuery),
		waitText(".signin .error", "unknown ACL token"),
	)
	var stored string
	run(t, ctx, chromedp.Evaluate(`sessionStorage.getItem("raftcron.token") ?? ""`, &stored))
	if stored != "" {
		t.Errorf("a refused token was stored: %q", stored)
	}
	screenshot(t, ctx, desktop, "signin")
}

// TestBrowserOverviewCountsPrunedRuns: the overview's counts of the last
// hour are the cluster's, not those of the runs the page can list, so runs
// a history limit pruned still count.
func TestBrowserOverviewCountsPrunedRuns(t *testing.T) {
	chromiumPath(t)
	node := newFakeNode(t, nil)
	node.apply(billingSpec())
	for _, st := range []pb.RunState{succeeded, failed, succeeded, succeeded, failed} {
		node.fire("billing", scheduled, st)
	}
	node.prune()
	ctx := newBrowser(t, desktop)
	run(t, ctx,
		chromedp.Navigate(node.url+"/ui/#/"),
		waitText(".stats", "#5"),
		waitText(".stat.bad dd", "2"),
	)
	var fires string
	run(t, ctx, chromedp.Text(`.stats .stat:nth-child(3) dd`, &fires, chromedp.ByQuery))
	if fires != "5" {
		t.Errorf("fires of the last hour %q, want 5 (every run fired, none of them listed)", fires)
	}
}

// TestBrowserNoACL: with ACLs off there is no sign-in and every action is
// offered.
func TestBrowserNoACL(t *testing.T) {
	chromiumPath(t)
	node := newFakeNode(t, nil)
	node.apply(billingSpec())
	ctx := newBrowser(t, desktop)
	run(t, ctx,
		chromedp.Navigate(node.url+"/ui/#/jobs/billing"),
		waitText("header .who", "anonymous"),
		waitText(".toolbar", "Trigger now"),
	)
	if n := count(t, ctx, "#token"); n != 0 {
		t.Error("ACLs off: a sign-in form is shown")
	}
	if n := count(t, ctx, "header button"); n != 0 {
		t.Error("ACLs off: a sign-out button is shown")
	}
}

// TestBrowserPhone: every page fits a phone's width; nothing scrolls the
// page sideways (wide tables scroll inside their own box).
func TestBrowserPhone(t *testing.T) {
	chromiumPath(t)
	node := newFakeNode(t, aclTokens())
	node.apply(billingSpec())
	node.fire("billing", scheduled, succeeded)
	node.fire("billing", scheduled, dispatched)
	ctx := newBrowser(t, phone)
	signIn(t, ctx, node.url, opsSecret, "ops")
	pages := []struct{ name, route, ready, text string }{
		{"overview", "#/", ".stats", "#2"},
		{"jobs", "#/jobs", "table.jobs", "billing"},
		{"job", "#/jobs/billing", "table.ledger", "#2"},
		{"runs", "#/runs", "table.runs", "billing-2"},
		{"audit", "#/audit", "table.audit", "create"},
	}
	for _, p := range pages {
		run(t, ctx, goTo(p.route), waitText(p.ready, p.text), settled)
		var overflow bool
		run(t, ctx, chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflow))
		if overflow {
			t.Errorf("%s: the page is wider than the phone's screen", p.name)
		}
		screenshot(t, ctx, phone, p.name)
	}
}

// TestBrowserFormatting runs the pages' formatting in the browser: the
// schedule in words and the marking of daylight-saving changes.
func TestBrowserFormatting(t *testing.T) {
	chromiumPath(t)
	node := newFakeNode(t, nil)
	ctx := newBrowser(t, desktop)
	run(t, ctx, chromedp.Navigate(node.url+"/ui/"), waitText("header .who", "anonymous"))
	cases := map[string]string{
		`f.describeSchedule("0 2 * * *")`:      "at 02:00, every day",
		`f.describeSchedule("*/10 * * * * *")`: "every 10 seconds",
		`f.describeSchedule("*/5 * * * *")`:    "every 5 minutes",
		`f.describeSchedule("30 9 * * 1-5")`:   "at 09:30, on Monday to Friday",
		`f.describeSchedule("0 16 */2 * sat")`: "at 16:00, every 2 days of the month or on Saturday",
		`f.describeSchedule("0 0 1 jan *")`:    "at 00:00, on day 1 of the month in January",
		`f.describeSchedule("@every 90s")`:     "every 90s",
		`f.describeSchedule("@hourly")`:        "every hour, on the hour",
		`f.describeSchedule("0 0 1,15 * *")`:   "",
		`f.markOffsets([new Date("2026-03-28T01:00:00Z"), new Date("2026-03-29T01:00:00Z"), new Date("2026-03-30T01:00:00Z")], "Europe/Berlin").map((x) => x.change).join("|")`: "|GMT+01:00 → GMT+02:00|",
		`f.markOffsets([new Date("2026-11-01T04:00:00Z"), new Date("2026-11-01T07:00:00Z")], "America/New_York").map((x) => x.change).join("|")`:                                "|GMT-04:00 → GMT-05:00",
		`f.zoneTime(new Date("2026-07-01T12:00:00Z"), "Europe/London")`:                                                                                                         "2026-07-01 13:00:00 BST",
	}
	for expr, want := range cases {
		var got string
		run(t, ctx, chromedp.Evaluate(`import("/ui/js/format.js").then((f) => `+expr+`)`, &got,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
		if got != want {
			t.Errorf("%s\n got %q\nwant %q", expr, got, want)
		}
	}
}
