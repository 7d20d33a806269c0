package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/raftcron/raftcron/bench/harness"
	"github.com/raftcron/raftcron/localcluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	failoverJob = "failover-tick"
	// firstFireTimeout bounds the wait for the new leader's first fire.
	firstFireTimeout = 30 * time.Second
	// caughtUpTimeout bounds the wait for on-time fires after a failover.
	caughtUpTimeout = 30 * time.Second
	// onTime is how late a delivery may be and count as back on schedule.
	onTime = 500 * time.Millisecond
)

// failoverSetting is one Raft timing the rounds run under.
type failoverSetting struct {
	Name   string
	Flags  []string
	Target time.Duration
}

var failoverSettings = []failoverSetting{
	{"default", nil, 2 * time.Second},
	{"heartbeat-500ms", []string{"--raft-heartbeat", "500ms"}, time.Second},
}

type failoverRound struct {
	Killed string    `json:"killed"`
	KillAt time.Time `json:"kill_at"`
	// KillPhaseMs is how far into its second the kill came.
	KillPhaseMs float64 `json:"kill_phase_ms"`
	NewLeader   string  `json:"new_leader"`
	// ElectedMs: kill → a surviving node reports itself leader (polled
	// every 20 ms, so up to 20 ms late).
	ElectedMs float64 `json:"elected_ms"`
	// FirstFireMs: kill → the sink receives the new leader's first
	// delivery.
	FirstFireMs float64 `json:"first_fire_ms"`
	// FirstSlotAge: how old that delivery's slot was when it arrived.
	FirstSlotLateMs float64 `json:"first_fire_lateness_ms"`
	FirstAttempt    int     `json:"first_fire_attempt"`
	// CaughtUpMs: kill → the first delivery less than 500 ms late.
	CaughtUpMs float64 `json:"caught_up_ms"`
	// RestartReadyMs: restart of the killed node → its /readyz 200.
	RestartReadyMs float64 `json:"restart_ready_ms"`
}

type failoverRun struct {
	Setting   string          `json:"setting"`
	Flags     []string        `json:"flags"`
	Rounds    []failoverRound `json:"rounds"`
	FirstFire harness.Dist    `json:"kill_to_first_fire"`
	Elected   harness.Dist    `json:"kill_to_new_leader"`
	CaughtUp  harness.Dist    `json:"kill_to_on_time"`
	// Slots is the whole run's ledger as the sink saw it.
	Slots          int `json:"slots"`
	MissingSlots   int `json:"missing_slots"`
	DuplicateSlots int `json:"duplicate_slots"`
	// Missing and Duplicate list the first of those slots (RFC 3339).
	Missing   []string `json:"missing,omitempty"`
	Duplicate []string `json:"duplicate,omitempty"`
	// Redeliveries are extra deliveries of a run (at_least_once
	// re-dispatch of an attempt whose outcome the killed leader had not
	// committed); the idempotency key is the same.
	Redeliveries int `json:"redeliveries"`
}

// runFailover kills the leader round after round while an every-second job
// runs, under each Raft setting, and checks the sink's ledger for
// duplicate and missing slots.
func runFailover(ctx context.Context, e *env, res *Result) error {
	rounds := e.cfg.FailoverRounds
	res.Params["rounds_per_setting"] = rounds
	res.Params["seed"] = e.cfg.Seed
	var runs []*failoverRun
	res.Metrics = &runs
	rng := rand.New(rand.NewPCG(uint64(e.cfg.Seed), 0))
	summary := ""
	for _, s := range failoverSettings {
		r := &failoverRun{Setting: s.Name, Flags: s.Flags}
		runs = append(runs, r)
		err := failoverSettingRun(ctx, e, s, rounds, rng, r)
		summary += fmt.Sprintf("%s: kill→first fire p50=%.0fms p99=%.0fms max=%.0fms (n=%d) dup=%d missing=%d; ",
			s.Name, r.FirstFire.P50Ms, r.FirstFire.P99Ms, r.FirstFire.MaxMs, r.FirstFire.N, r.DuplicateSlots, r.MissingSlots)
		res.target("first_fire_p99_"+s.Name, fmt.Sprintf("≤ %s", s.Target), r.FirstFire.P99Ms, "ms",
			r.FirstFire.N == rounds && r.FirstFire.P99Ms <= float64(s.Target.Milliseconds()))
		if r.DuplicateSlots > 0 {
			res.violate("%s: %d duplicate slots", s.Name, r.DuplicateSlots)
		}
		if r.MissingSlots > 0 {
			res.violate("%s: %d missing slots", s.Name, r.MissingSlots)
		}
		if err != nil {
			res.Summary = summary
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	res.Summary = summary
	return nil
}

func failoverSettingRun(ctx context.Context, e *env, s failoverSetting, rounds int, rng *rand.Rand, r *failoverRun) error {
	sink, err := harness.NewSink()
	if err != nil {
		return err
	}
	defer func() { _ = sink.Close() }()
	c, leader, err := e.startLed(ctx, "failover-"+s.Name, s.Flags...)
	if err != nil {
		return err
	}
	defer func() { _ = c.Crash() }()
	conns, err := harness.Dial(leader.Addr, 1)
	if err != nil {
		return err
	}
	_, err = pb.NewJobServiceClient(conns[0]).ApplyJob(ctx, &pb.ApplyJobRequest{Spec: httpJob(failoverJob, "* * * * * *", sink.URL())})
	harness.CloseAll(conns)
	if err != nil {
		return fmt.Errorf("registering %s: %w", failoverJob, err)
	}
	// Run until the job fires on time, then kill round after round; the
	// ledger is checked over everything, even if a round fails.
	var roundErr error
	if _, ok := waitOnTime(ctx, sink, time.Now(), caughtUpTimeout); !ok {
		roundErr = fmt.Errorf("%s never fired on time", failoverJob)
	}
	for i := 0; i < rounds && roundErr == nil; i++ {
		var round failoverRound
		round, roundErr = failoverRoundRun(ctx, e, c, sink, rng)
		if roundErr == nil {
			r.Rounds = append(r.Rounds, round)
			e.logf("failover %s round %d/%d: killed %s at +%.0fms; leader %s after %.0fms; first fire after %.0fms (attempt %d, %.0fms late); on time after %.0fms",
				s.Name, i+1, rounds, round.Killed, round.KillPhaseMs, round.NewLeader, round.ElectedMs, round.FirstFireMs, round.FirstAttempt, round.FirstSlotLateMs, round.CaughtUpMs)
		}
	}
	// Let the last catch-up finish before judging the ledger.
	if roundErr == nil {
		if _, ok := waitOnTime(ctx, sink, time.Now(), caughtUpTimeout); !ok {
			roundErr = fmt.Errorf("not back on time after the last round")
		}
	}
	_ = c.Crash()
	r.ledger(sink.Since(0))
	var first, elected, caught []time.Duration
	for _, rd := range r.Rounds {
		first = append(first, msDur(rd.FirstFireMs))
		elected = append(elected, msDur(rd.ElectedMs))
		caught = append(caught, msDur(rd.CaughtUpMs))
	}
	r.FirstFire, r.Elected, r.CaughtUp = harness.Summarize(first), harness.Summarize(elected), harness.Summarize(caught)
	return roundErr
}

// failoverRoundRun kills the leader at a random point between two fires,
// measures the failover, restarts the node and waits until all is well.
func failoverRoundRun(ctx context.Context, e *env, c *localcluster.Cluster, sink *harness.Sink, rng *rand.Rand) (failoverRound, error) {
	var round failoverRound
	leader, err := harness.Leader(ctx, c, harness.ReadyTimeout)
	if err != nil {
		return round, err
	}
	round.Killed = leader.ID
	// Kill after a fire has arrived and before the next is due, so every
	// delivery after the kill is the new leader's.
	killAt, err := killPoint(ctx, sink, rng)
	if err != nil {
		return round, err
	}
	if err := sleepUntil(ctx, killAt); err != nil {
		return round, err
	}
	from := sink.Len()
	k, _ := leader.Kill()
	round.KillAt = k.UTC()
	round.KillPhaseMs = harness.Ms(k.Sub(k.Truncate(time.Second)))

	electedCh := make(chan struct{})
	go func() {
		defer close(electedCh)
		if nl, err := harness.Leader(ctx, c, firstFireTimeout); err == nil {
			round.ElectedMs = harness.Ms(time.Since(k))
			round.NewLeader = nl.ID
		}
	}()
	var firstFire harness.Delivery
	got := sink.Watch(ctx, k.Add(firstFireTimeout), from, func(batch []harness.Delivery) bool {
		for _, d := range batch {
			if d.Job == failoverJob && d.Recv.After(k) {
				firstFire = d
				return true
			}
		}
		return false
	})
	<-electedCh
	if !got {
		return round, fmt.Errorf("no fire within %s of killing %s", firstFireTimeout, leader.ID)
	}
	round.FirstFireMs = harness.Ms(firstFire.Recv.Sub(k))
	round.FirstSlotLateMs = harness.Ms(firstFire.Lateness())
	round.FirstAttempt = firstFire.Attempt
	caught, ok := waitOnTime(ctx, sink, k, caughtUpTimeout)
	if !ok {
		return round, fmt.Errorf("not back on time within %s of killing %s", caughtUpTimeout, leader.ID)
	}
	round.CaughtUpMs = harness.Ms(caught.Sub(k))

	if err := c.Restart(leader.ID); err != nil {
		return round, err
	}
	ready, err := harness.WaitReady(ctx, leader, harness.ReadyTimeout)
	if err != nil {
		return round, err
	}
	round.RestartReadyMs = harness.Ms(ready)
	// The restarted node is a follower again; fire on time once more
	// before the next round.
	if _, ok := waitOnTime(ctx, sink, time.Now(), caughtUpTimeout); !ok {
		return round, fmt.Errorf("not on time within %s of restarting %s", caughtUpTimeout, leader.ID)
	}
	return round, nil
}

// waitOnTime waits for a delivery received after since that is less than
// onTime late and returns when it arrived.
func waitOnTime(ctx context.Context, sink *harness.Sink, since time.Time, timeout time.Duration) (time.Time, bool) {
	from := max(sink.Len()-5, 0)
	var at time.Time
	ok := sink.Watch(ctx, time.Now().Add(timeout), from, func(batch []harness.Delivery) bool {
		for _, d := range batch {
			if d.Job == failoverJob && d.Recv.After(since) && d.Lateness() < onTime {
				at = d.Recv
				return true
			}
		}
		return false
	})
	return at, ok
}

// killPoint waits for the next delivery and returns a random instant
// between 100 ms after it and 150 ms before the next slot.
func killPoint(ctx context.Context, sink *harness.Sink, rng *rand.Rand) (time.Time, error) {
	for range 10 {
		from := sink.Len()
		var d harness.Delivery
		if !sink.Watch(ctx, time.Now().Add(5*time.Second), from, func(batch []harness.Delivery) bool {
			for _, x := range batch {
				if x.Job == failoverJob {
					d = x
					return true
				}
			}
			return false
		}) {
			return time.Time{}, fmt.Errorf("no delivery to time the kill on")
		}
		lo := d.Recv.Add(100 * time.Millisecond)
		hi := time.Unix(d.Slot+1, 0).Add(-150 * time.Millisecond)
		if hi.Sub(lo) < 50*time.Millisecond || time.Now().After(hi) {
			continue // this fire came late; time on the next one
		}
		return lo.Add(time.Duration(rng.Int64N(int64(hi.Sub(lo))))), nil
	}
	return time.Time{}, fmt.Errorf("fires never on time enough to place a kill between two of them")
}

// ledger checks every slot between the first and the last delivery:
// delivered at least once (missing otherwise), under one run id
// (duplicate otherwise).
func (r *failoverRun) ledger(all []harness.Delivery) {
	runs := map[int64]map[string]int{}
	for _, d := range all {
		if d.Job != failoverJob {
			continue
		}
		if runs[d.Slot] == nil {
			runs[d.Slot] = map[string]int{}
		}
		runs[d.Slot][d.RunID]++
	}
	if len(runs) == 0 {
		return
	}
	slots := make([]int64, 0, len(runs))
	for s := range runs {
		slots = append(slots, s)
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i] < slots[j] })
	r.Slots = int(slots[len(slots)-1] - slots[0] + 1)
	for slot := slots[0]; slot <= slots[len(slots)-1]; slot++ {
		ids, ok := runs[slot]
		switch {
		case !ok:
			r.MissingSlots++
			r.Missing = appendSlot(r.Missing, slot)
		case len(ids) > 1:
			r.DuplicateSlots++
			r.Duplicate = appendSlot(r.Duplicate, slot)
		}
		for _, n := range ids {
			r.Redeliveries += n - 1
		}
	}
}

// appendSlot lists a slot, up to maxListed of them.
func appendSlot(list []string, slot int64) []string {
	if len(list) >= maxListed {
		return list
	}
	return append(list, time.Unix(slot, 0).UTC().Format(time.RFC3339))
}

const maxListed = 50

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
