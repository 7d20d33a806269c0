package fsm_test

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The check-ins of the generated log: jobs of names of their own, their
// pings, and what other kinds do to them (fires and misses, deadlines, a
// new target, deletes, tokens of role checkin). Every draw is g.ck's and
// no entry moves the clock, and the rest of the generator passes their
// runs by, so the rest of the log is the one it is without them.

var checkinPool = []string{"ping-a", "ping-b", "ping-c"}

func (g *commandGen) ckPick(options ...string) string { return options[g.ck.IntN(len(options))] }

// checkinEntry is the data of the next check-in entry.
func (g *commandGen) checkinEntry() []byte {
	var c *pb.Command
	switch n := g.ck.IntN(100); {
	case n < 20:
		c = upsertCmd(g.checkinSpec())
	case n < 70:
		c = g.ping()
	case n < 78:
		c = g.checkinFireBatch()
	case n < 86:
		c = g.checkinDeadline()
	case n < 93:
		c = deleteCmd(g.ckPick(checkinPool...), 0)
	default:
		c = createTokenCmd(aclToken("cron-"+g.ckPick("a", "b"), pb.AclRole_ACL_ROLE_CHECKIN, map[string]string{"team": "ops"}))
	}
	c.ProposedAtUnixNano = g.now
	c.Caller = &pb.Caller{Principal: g.ckPick("", "cron")}
	data, err := proto.Marshal(c)
	if err != nil {
		panic(err) // the generator builds valid messages only
	}
	return data
}

// checkinSpec is a check-in job of the pool, now and then with a target
// instead (its open check-in runs are cancelled).
func (g *commandGen) checkinSpec() *pb.JobSpec {
	s := &pb.JobSpec{
		Name: g.ckPick(checkinPool...), Schedule: g.ckPick("* * * * *", "*/2 * * * *"), Timezone: "UTC",
		Labels: map[string]string{"team": "ops"}, HistoryLimit: uint32(g.ck.IntN(4)), Paused: g.ck.IntN(8) == 0,
		Expect: &pb.Expect{StartWithin: durationpb.New(time.Duration(g.ck.IntN(60)+1) * time.Second)},
	}
	if g.ck.IntN(2) == 0 {
		s.Deadline = durationpb.New(time.Duration(g.ck.IntN(30)+1) * time.Second)
	}
	if g.ck.IntN(2) == 0 { // the alerts of check-ins: from pings, misses and deadlines, and too_long from a start
		s.Expect.MaxDuration = durationpb.New(time.Duration(g.ck.IntN(10)+1) * time.Second)
		s.Notify = []*pb.Notify{{Channel: "ops", On: []string{"failed", "recovered", "missed", "late", "too_long"}}}
	}
	if g.ck.IntN(8) == 0 {
		s.Http = &pb.HttpTarget{Url: "http://ping.test/"}
	} else {
		s.Checkin = &pb.CheckinTarget{}
	}
	return s
}

// ping checks a job in, now and then with a match the view no longer
// holds, a slot past its grace, misses before it, a run to close or a
// request id seen before.
func (g *commandGen) ping() *pb.Command {
	r := g.ck
	name := g.ckPick(checkinPool...)
	gen, cursor := uint64(1), g.now/int64(time.Second)
	if j, err := g.view.Job(name); err == nil {
		gen, cursor = j.GetGeneration(), j.GetStatus().GetCursorUnix()
	}
	ci := &pb.CheckinCommand{
		Job: name, Generation: gen, CursorUnix: cursor,
		Status:    pb.CheckinStatus(r.IntN(3) + 1),
		RequestId: g.ckPick("", "", "p1", "p2"),
	}
	if r.IntN(6) == 0 {
		ci.CursorUnix-- // a stale match
	}
	if r.IntN(3) > 0 {
		ci.SlotUnix = max(ci.CursorUnix+1, g.now/int64(time.Second)+int64(r.IntN(50))-40)
		if n := ci.SlotUnix - ci.CursorUnix - 1; n > 0 && r.IntN(3) == 0 {
			ci.MissedFromUnix, ci.MissedToUnix, ci.MissedCount = ci.CursorUnix+1, ci.SlotUnix-1, uint64(r.IntN(int(min(n, 5)))+1)
		}
	}
	if ci.Status != pb.CheckinStatus_CHECKIN_STATUS_START {
		if open := g.openCheckins(); len(open) > 0 && r.IntN(2) == 0 {
			ci.RunId = open[r.IntN(len(open))].GetId()
		}
		if ci.Status == pb.CheckinStatus_CHECKIN_STATUS_FAIL && r.IntN(2) == 0 {
			code := int32(r.IntN(3) + 1)
			ci.ExitCode, ci.Output = &code, []byte(g.ckPick("boom", ""))
		}
	}
	if r.IntN(4) == 0 {
		ci.MaxOpenRuns = uint32(r.IntN(2) + 1)
	}
	return &pb.Command{Kind: &pb.Command_Checkin{Checkin: ci}}
}

// checkinFireBatch fires a check-in job's slot (refused) and misses its
// slots up to about now, whose grace may or may not have passed.
func (g *commandGen) checkinFireBatch() *pb.Command {
	name := g.ckPick(checkinPool...)
	gen, cursor := uint64(1), g.now/int64(time.Second)
	if j, err := g.view.Job(name); err == nil {
		gen, cursor = j.GetGeneration(), j.GetStatus().GetCursorUnix()
	}
	to := max(cursor+1, g.now/int64(time.Second)-int64(g.ck.IntN(90)))
	miss := &pb.Miss{Job: name, Generation: gen, FromSlotUnix: cursor + 1, ToSlotUnix: to, Count: uint64(g.ck.IntN(3) + 1),
		Reason: fsm.ReasonNoCheckin}
	return fireBatchCmd("n1", g.term, []*pb.Fire{slotFire(name, gen, to+60)}, []*pb.Miss{miss})
}

// checkinDeadline reports the oldest open check-in run DEADLINE_EXCEEDED,
// as the leader does (or something else, which the FSM refuses).
func (g *commandGen) checkinDeadline() *pb.Command {
	open := g.openCheckins()
	if len(open) == 0 {
		return completeBatchCmd(&pb.Completion{RunId: "ping-a-1", Token: 1, Outcome: stDeadline})
	}
	r := slices.MinFunc(open, func(a, b *pb.Run) int { return int(a.GetCreatedAtUnixNano() - b.GetCreatedAtUnixNano()) })
	c := &pb.Completion{RunId: r.GetId(), Token: fsm.CurrentAttempt(r).GetToken(), Outcome: stDeadline}
	if g.ck.IntN(5) == 0 {
		c.Outcome = stSucceeded
	}
	return completeBatchCmd(c)
}

// openCheckins are the view's open check-in runs.
func (g *commandGen) openCheckins() []*pb.Run {
	var out []*pb.Run
	for _, r := range g.view.OpenRuns() {
		if r.GetKind() == pb.FireKind_FIRE_KIND_CHECKIN {
			out = append(out, r)
		}
	}
	return out
}

// pinged reports whether r is a run of the check-ins' jobs, which the
// rest of the generator leaves alone.
func (g *commandGen) pinged(r *pb.Run) bool { return slices.Contains(checkinPool, r.GetJob()) }

// unpinged is runs without those of the check-ins' jobs.
func (g *commandGen) unpinged(runs []*pb.Run) []*pb.Run {
	return slices.DeleteFunc(runs, g.pinged)
}
