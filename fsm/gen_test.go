package fsm_test

import (
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// commandGen produces a reproducible mix of commands over a small pool of
// names, so that creates collide, versions go stale, deletes are followed
// by re-creates and identical puts happen, plus fire and complete batches
// and malformed entries.
//
// With a view, fires and completions are aimed at what that FSM holds
// (generations, cursors, open runs, current tokens), so that most of them
// matter; the log is still a pure function of the seed and of the entries
// applied to the view, so every FSM fed the same entries must agree.
type commandGen struct {
	rng *rand.Rand
	// ck draws the check-ins' entries (gen_checkin_test.go), which leave
	// the rest of the log as it is without them.
	ck   *rand.Rand
	now  int64
	term uint64
	pool []string
	view *fsm.FSM
	// chains: specs may run after others (and have no schedule), deletes
	// may force, and completions carry their leader (chain_test.go).
	chains bool
	// clusterVersion, above 1, is the cluster version the first entry raises to.
	clusterVersion uint32
}

func newCommandGen(seed uint64) *commandGen {
	return &commandGen{
		rng:  rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		ck:   rand.New(rand.NewPCG(seed^0x5bd1e995, seed)),
		now:  baseTime.UnixNano(),
		term: 1,
		pool: []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"},
	}
}

func (g *commandGen) pick(options ...string) string { return options[g.rng.IntN(len(options))] }

func (g *commandGen) name() string { return g.pool[g.rng.IntN(len(g.pool))] }

func (g *commandGen) version() uint64 {
	if g.rng.IntN(3) > 0 {
		return 0
	}
	return uint64(g.rng.IntN(4) + 1)
}

func (g *commandGen) spec() *pb.JobSpec {
	s := &pb.JobSpec{
		Name:     g.name(),
		Schedule: g.pick("@hourly", "@daily", "*/5 * * * *"),
		Timezone: g.pick("UTC", "Europe/Berlin"),
		Labels:   map[string]string{"team": g.pick("billing", "ops")},
		Paused:   g.rng.IntN(5) == 0,
		Catchup:  &pb.Catchup{Window: durationpb.New(time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
	}
	if g.rng.IntN(2) == 0 {
		s.Labels["env"] = g.pick("prod", "dev")
	}
	s.Overlap = pb.Overlap(g.rng.IntN(5))
	s.Delivery = pb.Delivery(g.rng.IntN(3))
	s.HistoryLimit = uint32(g.rng.IntN(4))
	if g.rng.IntN(2) == 0 {
		s.Retry = &pb.Retry{MaxAttempts: uint32(g.rng.IntN(4) + 1), InitialBackoff: durationpb.New(time.Second), MaxBackoff: durationpb.New(3 * time.Second)}
	}
	if g.rng.IntN(6) == 0 {
		s.StartAt = timestamppb.New(time.Unix(0, g.now).Add(time.Duration(g.rng.IntN(120)) * time.Second))
	}
	if g.rng.IntN(6) == 0 {
		s.EndAt = timestamppb.New(time.Unix(0, g.now).Add(time.Duration(g.rng.IntN(600)) * time.Second))
	}
	switch g.rng.IntN(6) {
	case 0:
		s.Calendars = &pb.CalendarRefs{Exclude: []string{g.pick("busy", "weekend", "nope")}}
	case 1:
		s.Calendars = &pb.CalendarRefs{Only: []string{g.pick("busy", "weekend")}}
	}
	if g.rng.IntN(3) == 0 {
		s.Expect = &pb.Expect{StartWithin: durationpb.New(time.Duration(g.rng.IntN(3)) * time.Second),
			MaxDuration: durationpb.New(time.Duration(g.rng.IntN(5)+1) * time.Second)}
		s.Notify = []*pb.Notify{{Channel: g.pick("ops", "pd"), On: []string{"failed", "recovered", "missed", "late", "too_long"},
			AfterFailures: uint32(g.rng.IntN(3)), Repeat: durationpb.New(time.Duration(g.rng.IntN(3)) * time.Second)}}
	}
	if g.rng.IntN(5) == 0 {
		s.Schedule, s.Schedules = "", []string{"@hourly", g.pick("@daily", "*/5 * * * *")}
	}
	if g.rng.IntN(4) == 0 {
		s.MaxRuns = uint32(g.rng.IntN(3) + 1)
	}
	if g.rng.IntN(4) == 0 {
		s.PauseAfterFailures = uint32(g.rng.IntN(2) + 1)
	}
	if g.rng.IntN(6) == 0 {
		s.Jitter = durationpb.New(time.Duration(g.rng.IntN(30)) * time.Second)
	}
	if g.rng.IntN(4) == 0 {
		s.Exec = &pb.ExecTarget{Command: []string{"/bin/" + g.pick("true", "date")}, Env: map[string]string{"A": "b", "C": "d"}}
	} else {
		s.Http = &pb.HttpTarget{Url: "http://" + g.pick("a", "b") + ".test/", Headers: map[string]string{"X-A": "1", "X-B": "2"}}
	}
	if g.chains && g.rng.IntN(2) == 0 {
		g.dependencies(s)
	}
	return s
}

// dependencies makes s run after one to three names of the pool, itself
// included now and then (the FSM refuses what closes a cycle).
func (g *commandGen) dependencies(s *pb.JobSpec) {
	ons := []pb.DependencyOn{onSuccess, onSuccess, onFailure, onAny}
	seen := map[string]bool{}
	for range g.rng.IntN(3) + 1 {
		if p := g.name(); !seen[p] {
			seen[p] = true
			s.After = append(s.After, dep(p, ons[g.rng.IntN(len(ons))]))
		}
	}
	s.AfterMode = pb.AfterMode(g.rng.IntN(2) + 1)
	s.AfterMissing = pb.AfterMissing(g.rng.IntN(2) + 1)
	if g.rng.IntN(3) == 0 {
		s.AfterWithin = durationpb.New(time.Duration(g.rng.IntN(60)+1) * time.Second)
	}
	if g.rng.IntN(3) > 0 {
		s.Schedule = ""
	}
}

// next returns the data of the next log entry.
func (g *commandGen) next() []byte {
	if g.ck.IntN(100) < 15 {
		return g.checkinEntry()
	}
	g.now += int64(time.Second) + g.rng.Int64N(int64(time.Second))
	var c *pb.Command
	switch n := g.rng.IntN(100); {
	case g.clusterVersion > 1:
		c, g.clusterVersion = fsm.SetClusterVersion(g.clusterVersion), 0
	case n < 25:
		mode := pb.PutMode(g.rng.IntN(3) + 1)
		c = putCmd(mode, g.spec(), g.version())
	case n < 32:
		c = deleteCmd(g.name(), g.version())
		c.GetDeleteJob().Force = g.chains && g.rng.IntN(2) == 0
	case n < 42:
		c = pauseCmd(g.name(), g.rng.IntN(2) == 0, g.pick("", "maintenance", "incident"))
		if p := c.GetSetPaused(); p.GetPaused() && g.rng.IntN(3) == 0 {
			p.UntilUnix = g.now/int64(time.Second) + int64(g.rng.IntN(20)) - 2
		}
	case n < 62:
		c = g.fireBatch()
	case n < 65:
		c = g.scheduleWrite()
	case n < 68:
		c = g.alertWrite()
	case n < 84:
		c = g.completeBatch()
	case n < 87:
		c = g.cancel()
	case n < 89:
		c = &pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{
			Limit: uint32(g.rng.IntN(20) + 1), EnableOnly: g.rng.IntN(2) == 0,
		}}}
	case n < 91:
		c = g.aclWrite()
	case n < 93:
		c = g.secretWrite()
	case n < 95:
		c = g.calendarWrite()
	case n < 97:
		c = g.freezeWrite()
	default:
		return g.malformed()
	}
	c.ProposedAtUnixNano = g.now
	c.Caller = &pb.Caller{Principal: g.pick("", "alice", "bob")}
	data, err := proto.Marshal(c)
	if err != nil {
		panic(err) // the generator builds valid messages only
	}
	return data
}

// aclWrite bootstraps, creates or deletes a token of a few names, so that
// some succeed and some are refused.
func (g *commandGen) aclWrite() *pb.Command {
	name := g.pick("root", "ci", "ops")
	switch g.rng.IntN(3) {
	case 0:
		return bootstrapCmd(aclToken(name, pb.AclRole_ACL_ROLE_MANAGEMENT, nil))
	case 1:
		return createTokenCmd(aclToken(name, pb.AclRole(g.rng.IntN(4)+1), nil))
	default:
		return deleteTokenCmd("acc-" + name)
	}
}

// secretWrite puts, deletes or rotates one of a few secrets, some with a
// version that may be stale.
func (g *commandGen) secretWrite() *pb.Command {
	name := g.pick("db", "api")
	switch g.rng.IntN(3) {
	case 0:
		return putSecretCmd(sealed(name, g.pick("k1", "k2"), g.pick("a", "b")), g.version())
	case 1:
		return deleteSecretCmd(name)
	default:
		s := sealed(name, g.pick("k1", "k2"), "c")
		s.Version = g.version()
		return rotateSecretsCmd(s)
	}
}

// calendarWrite puts or deletes one of a few calendars: "busy", a range
// around now, and "weekend", a window of a few minutes on the log's
// Sunday, in one zone or another.
func (g *commandGen) calendarWrite() *pb.Command {
	if g.rng.IntN(2) == 0 { // of one jobs may name: in use, now and then
		return &pb.Command{Kind: &pb.Command_DeleteCalendar{DeleteCalendar: &pb.DeleteCalendarCommand{Name: g.pick("busy", "weekend")}}}
	}
	name := g.pick("busy", "weekend", "nope")
	now := time.Unix(0, g.now).UTC()
	spec := &pb.CalendarSpec{Name: name, Timezone: g.pick("UTC", "Europe/Berlin")}
	if name == "weekend" {
		spec.Entries = []*pb.CalendarEntry{{Days: []string{"sun"}, Between: g.pick("01:05-01:09", "02:06-02:12")}}
	} else {
		from := now.Add(time.Duration(g.rng.IntN(60)-30) * time.Second)
		spec.Entries = []*pb.CalendarEntry{{From: from.Format(time.RFC3339), To: from.Add(time.Duration(g.rng.IntN(120)+1) * time.Second).Format(time.RFC3339)}}
	}
	return putCalendarCmd(spec)
}

// freezeWrite creates or deletes one of two freezes around now, some
// deferring, some for one team only.
func (g *commandGen) freezeWrite() *pb.Command {
	name := g.pick("f1", "f2")
	if g.rng.IntN(3) == 0 {
		return &pb.Command{Kind: &pb.Command_DeleteFreeze{DeleteFreeze: &pb.DeleteFreezeCommand{Name: name}}}
	}
	from := time.Unix(0, g.now).Add(time.Duration(g.rng.IntN(40)-10) * time.Second)
	fr := &pb.Freeze{
		Name: name, From: timestamppb.New(from), To: timestamppb.New(from.Add(time.Duration(g.rng.IntN(90)+1) * time.Second)),
		Defer: g.rng.IntN(2) == 0,
	}
	if g.rng.IntN(2) == 0 {
		fr.Selector = map[string]string{"team": "billing"}
	}
	return &pb.Command{Kind: &pb.Command_CreateFreeze{CreateFreeze: &pb.CreateFreezeCommand{Freeze: fr}}}
}

// alertWrite puts or deletes a channel or rule, or has a leader check
// what is due or record a delivery, aimed at the view's state.
func (g *commandGen) alertWrite() *pb.Command {
	name := g.pick("ops", "pd")
	switch g.rng.IntN(5) {
	case 0:
		ch := &pb.Channel{Name: name, Webhook: &pb.WebhookChannel{Url: "http://" + g.pick("a", "b") + ".test/"}}
		if name == "pd" {
			ch.Webhook, ch.Pagerduty = nil, &pb.PagerDutyChannel{RoutingKey: "k"}
		}
		return &pb.Command{Kind: &pb.Command_PutChannel{PutChannel: &pb.PutChannelCommand{Channel: ch}}}
	case 1:
		if g.rng.IntN(3) == 0 {
			return &pb.Command{Kind: &pb.Command_DeleteChannel{DeleteChannel: &pb.DeleteChannelCommand{Name: name}}}
		}
		return &pb.Command{Kind: &pb.Command_PutNotifyRule{PutNotifyRule: &pb.PutNotifyRuleCommand{Rule: &pb.NotifyRule{
			Name: "rule-" + name, Selector: map[string]string{"team": g.pick("ops", "billing")}, Channel: name, On: []string{"failed", "missed"},
		}}}}
	case 2:
		var pending []string
		if g.view != nil {
			for _, a := range g.view.PendingAlerts() {
				pending = append(pending, a.GetId())
			}
		}
		id := "none"
		if len(pending) > 0 {
			id = pending[g.rng.IntN(len(pending))]
		}
		return &pb.Command{Kind: &pb.Command_RecordDeliveries{RecordDeliveries: &pb.RecordDeliveriesCommand{
			Records: []*pb.DeliveryRecord{{AlertId: id, Attempt: &pb.DeliveryAttempt{Ok: g.rng.IntN(2) == 0, Final: g.rng.IntN(4) == 0}}},
		}}}
	default:
		checks := []*pb.AlertCheck{
			{Job: g.name(), Event: "no_success"},
			{Job: g.name(), Event: "late", SlotUnix: g.now/int64(time.Second) - int64(g.rng.IntN(30))},
		}
		if g.view != nil {
			checks = append(checks, g.view.TooLongDue(g.now, 3)...)
			for _, ep := range g.view.OpenEpisodes() {
				checks = append(checks, &pb.AlertCheck{Job: ep.GetJob(), Episode: ep.GetId(), Channel: name})
			}
		}
		return &pb.Command{Kind: &pb.Command_CheckAlerts{CheckAlerts: &pb.CheckAlertsCommand{
			LeaderId: "n1", Term: g.pick1(1, 2), Checks: checks, HistoryLimit: uint32(g.rng.IntN(3) * 10),
		}}}
	}
}

// pick1 is one of the numbers.
func (g *commandGen) pick1(options ...uint64) uint64 { return options[g.rng.IntN(len(options))] }

func (g *commandGen) malformed() []byte {
	var c *pb.Command
	switch g.rng.IntN(6) {
	case 0:
		b := make([]byte, g.rng.IntN(24)+1)
		for i := range b {
			b[i] = byte(g.rng.IntN(256))
		}
		return b
	case 1:
		c = &pb.Command{}
	case 2:
		c = &pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Mode: pb.PutMode_PUT_MODE_UPSERT}}}
	case 3:
		s := g.spec()
		s.Name = ""
		c = upsertCmd(s)
	case 4:
		c = deleteCmd("", 0)
	default:
		c = pauseCmd("", true, "x")
	}
	c.ProposedAtUnixNano = g.now
	data, _ := proto.Marshal(c)
	return data
}

func (g *commandGen) fireBatch() *pb.Command {
	if g.rng.IntN(8) == 0 {
		g.term++ // a new leader: earlier attempts become orphans
	}
	fires := make([]*pb.Fire, g.rng.IntN(6)+1)
	for i := range fires {
		fires[i] = g.fire()
	}
	var misses []*pb.Miss
	if g.rng.IntN(4) == 0 {
		name := g.name()
		gen, cursor, _ := g.jobInfo(name)
		from := cursor + int64(g.rng.IntN(20)) - 5
		to := from + int64(g.rng.IntN(100))
		misses = append(misses, &pb.Miss{Job: name, Generation: gen, FromSlotUnix: from, ToSlotUnix: to,
			Count: uint64(g.rng.IntN(10) + 1), Reason: g.pick("catchup_window", "catchup_policy")})
	}
	return fireBatchCmd(g.pick("n1", "n2", "n3"), g.term, fires, misses)
}

func (g *commandGen) fire() *pb.Fire {
	name := g.name()
	gen, cursor, buffered := g.jobInfo(name)
	if g.rng.IntN(8) == 0 {
		gen++
	}
	switch k := g.rng.IntN(12); {
	case k < 5:
		if d := g.deferredSlot(name); d != 0 && g.rng.IntN(2) == 0 {
			return &pb.Fire{Job: name, Generation: gen, SlotUnix: d, Kind: kindCatchup}
		}
		slot := cursor + int64(g.rng.IntN(120)) - 10
		if buffered != 0 && g.rng.IntN(2) == 0 {
			slot = buffered
		}
		f := slotFire(name, gen, slot)
		if g.rng.IntN(4) == 0 {
			f.Kind = kindCatchup
		}
		f.JitterMs = uint32(g.rng.IntN(2) * g.rng.IntN(30000))
		return f
	case k < 6:
		f := ofGeneration(manualFire(name, g.pick("", "r1", "r2"), g.rng.IntN(3) == 0), gen)
		f.Principal = g.pick("carol", "dave")
		f.Payload = g.pick("", `{"a":1}`)
		f.Overlap = pb.Overlap(g.rng.IntN(5))
		return f
	case k < 8:
		if r := g.openRun(stRetrying); r != nil {
			return ofGeneration(retryFire(r.GetJob(), r.GetId()), g.runGeneration(r))
		}
		return ofGeneration(retryFire(name, name+"-1"), gen)
	case k < 9:
		if r := g.openRun(stDispatched); r != nil {
			return ofGeneration(redispatchFire(r.GetJob(), r.GetId()), g.runGeneration(r))
		}
		return ofGeneration(redispatchFire(name, name+"-2"), gen)
	case k < 11:
		return g.backfillFire(name, gen)
	default:
		return &pb.Fire{Job: name, Kind: pb.FireKind(g.rng.IntN(8))}
	}
}

// scheduleWrite starts or cancels a backfill, or ends a pause, mostly of
// what the view holds.
func (g *commandGen) scheduleWrite() *pb.Command {
	name := g.name()
	gen, cursor, _ := g.jobInfo(name)
	switch g.rng.IntN(4) {
	case 0, 1:
		count := uint64(g.rng.IntN(5) + 1)
		from := cursor - int64(g.rng.IntN(7200))
		if r := g.succeededRun(name); r != nil && g.rng.IntN(2) == 0 {
			from = r.GetSlotUnix() // already succeeded, unless rerun
		}
		return &pb.Command{Kind: &pb.Command_StartBackfill{StartBackfill: &pb.StartBackfillCommand{
			Job: name, Generation: gen, FromUnix: from, ToUnix: from + int64(count)*300, FirstSlotUnix: from,
			Slots: count, Overlap: g.pick(fsm.BackfillSkip, fsm.BackfillBufferOne, fsm.BackfillAllow),
			MaxConcurrent: 1, Rerun: g.rng.IntN(2) == 0, MaxSlots: uint64(g.rng.IntN(6)),
		}}}
	case 2:
		return &pb.Command{Kind: &pb.Command_CancelBackfill{CancelBackfill: &pb.CancelBackfillCommand{Job: name}}}
	default:
		until := g.now/int64(time.Second) - int64(g.rng.IntN(5))
		if g.view != nil {
			if j, err := g.view.Job(name); err == nil && j.GetStatus().GetPause().GetUntilUnix() != 0 && g.rng.IntN(3) > 0 {
				until = j.GetStatus().GetPause().GetUntilUnix()
			}
		}
		return &pb.Command{Kind: &pb.Command_EndPause{EndPause: &pb.EndPauseCommand{Job: name, UntilUnix: until}}}
	}
}

// backfillFire aims at the next slot of a backfill running in the view,
// now and then at another slot or job.
func (g *commandGen) backfillFire(name string, gen uint64) *pb.Fire {
	slot := g.now/int64(time.Second) - 600
	if g.view != nil && g.rng.IntN(5) > 1 {
		for _, n := range g.pool {
			j, err := g.view.Job(n)
			if bf := j.GetStatus().GetBackfill(); err == nil && bf.GetState() == pb.BackfillState_BACKFILL_STATE_RUNNING {
				name, gen, slot = n, j.GetGeneration(), bf.GetNextSlotUnix()
				break
			}
		}
	}
	f := &pb.Fire{Job: name, Generation: gen, SlotUnix: slot, Kind: pb.FireKind_FIRE_KIND_BACKFILL, NextSlotUnix: slot + 300}
	if g.rng.IntN(10) == 0 {
		f.NextSlotUnix = slot // never moves on: malformed
	}
	return f
}

func (g *commandGen) completeBatch() *pb.Command {
	cs := make([]*pb.Completion, g.rng.IntN(3)+1)
	outcomes := []pb.RunState{stSucceeded, stFailed, stFailed, stFenced, stDeadline, stCancelled, stDispatched}
	for i := range cs {
		c := &pb.Completion{
			RunId:              g.name() + "-" + g.pick("1", "2", "3"),
			Token:              uint64(g.rng.IntN(5) + 1),
			Outcome:            outcomes[g.rng.IntN(len(outcomes))],
			StartedAtUnixNano:  g.now - int64(3*time.Second),
			FinishedAtUnixNano: g.now - g.rng.Int64N(int64(2*time.Second)),
			Detail:             g.pick("", "exit status 1", "HTTP 500"),
			Output:             []byte(g.pick("", "ok", "boom")),
		}
		if r := g.openRun(stDispatched); r != nil && g.rng.IntN(5) > 0 {
			c.RunId, c.Token = r.GetId(), fsm.CurrentAttempt(r).GetToken()
			if g.rng.IntN(6) == 0 {
				c.Token-- // a stale attempt
			}
		}
		cs[i] = c
	}
	cmd := completeBatchCmd(cs...)
	if g.chains {
		cmd.GetCompleteBatch().LeaderId, cmd.GetCompleteBatch().Term = "n1", g.term
	}
	return cmd
}

// jobInfo is what the view knows of a job, or a guess.
func (g *commandGen) jobInfo(name string) (generation uint64, cursor, buffered int64) {
	if g.view != nil {
		if j, err := g.view.Job(name); err == nil {
			return j.GetGeneration(), j.GetStatus().GetCursorUnix(), j.GetStatus().GetBufferedSlotUnix()
		}
	}
	return uint64(g.rng.IntN(3) + 1), g.now / int64(time.Second), 0
}

// deferredSlot is the slot a deferring freeze holds for the job in the
// view, or 0.
func (g *commandGen) deferredSlot(name string) int64 {
	if g.view == nil {
		return 0
	}
	j, err := g.view.Job(name)
	if err != nil {
		return 0
	}
	return j.GetStatus().GetDeferredSlotUnix()
}

// runGeneration is the generation a retry or re-dispatch of r names: its
// run's, now and then another.
func (g *commandGen) runGeneration(r *pb.Run) uint64 {
	if g.rng.IntN(8) == 0 {
		return r.GetGeneration() + 1
	}
	return r.GetGeneration()
}

// openRun picks an open run of the view in the given state, or nil.
func (g *commandGen) openRun(st pb.RunState) *pb.Run {
	if g.view == nil {
		return nil
	}
	var match []*pb.Run
	for _, r := range g.view.OpenRuns() {
		if r.GetState() == st && !g.pinged(r) {
			match = append(match, r)
		}
	}
	if len(match) == 0 {
		return nil
	}
	return match[g.rng.IntN(len(match))]
}

// cancel aims at an open run of the view, at any run of it (most are
// finished), or at an id that may not exist.
func (g *commandGen) cancel() *pb.Command {
	id := g.name() + "-" + g.pick("1", "2", "3")
	switch n := g.rng.IntN(6); {
	case n < 3:
		if r := g.openRun(g.pickState()); r != nil {
			id = r.GetId()
		}
	case n < 5 && g.view != nil:
		if runs := g.unpinged(g.view.ListRuns("", 0)); len(runs) > 0 {
			id = runs[g.rng.IntN(len(runs))].GetId()
		}
	}
	return &pb.Command{Kind: &pb.Command_CancelRun{CancelRun: &pb.CancelRunCommand{RunId: id}}}
}

func (g *commandGen) pickState() pb.RunState {
	if g.rng.IntN(2) == 0 {
		return stRetrying
	}
	return stDispatched
}

// succeededRun picks a successful run of a slot of the job in the view,
// or nil.
func (g *commandGen) succeededRun(name string) *pb.Run {
	if g.view == nil {
		return nil
	}
	for _, r := range g.view.ListRuns(name, 0) {
		if r.GetState() == stSucceeded && (r.GetKind() == kindScheduled || r.GetKind() == kindCatchup) {
			return r
		}
	}
	return nil
}
