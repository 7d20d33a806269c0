package server

import "github.com/raftcron/raftcron/internal/collect"

// waveBytesPerFire is what a leader allocates per fire of a wave, nearly
// all of it garbage soon after: the FSM's new run, the proposal, the
// hand-over, the offer or request, the outcome. Measured at about 6.8 KB
// per fire over the first 150 ms of the workers benchmark's 10,000-fire
// wave (Go execution traces of the leader), and at 10.8 KB per fire over
// the seconds of the steady benchmark's webhook waves, outcomes and
// planning included (GODEBUG=gctrace=1; docs/benchmarks.md). At 8 KB a
// steady leader went into one wave in seven with the headroom for 8 KB
// per fire but not for what the wave took, and collected in it.
const waveBytesPerFire = 16 << 10

// collectAheadOfWave is the scheduler's AheadOfWave: with a wave of fires
// planned ahead, it collects garbage now if the heap could not take the
// wave's allocations without the collector starting during the wave.
// Started there, the collection's marking and the assists it charges the
// allocating goroutines take CPU from the fires; before the wave they
// take the quiet of the plan-ahead lead.
func collectAheadOfWave(fires int) {
	collect.Ahead(uint64(fires) * waveBytesPerFire)
}
