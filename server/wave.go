package server

import "github.com/raftcron/raftcron/internal/collect"

// waveBytesPerFire is what a leader allocates per fire of a wave, nearly
// all of it garbage soon after: the FSM's new run, the proposal, the
// hand-over, the offer or request. Measured at about 6.8 KB per fire over
// the first 150 ms of the workers benchmark's 10,000-fire wave (Go
// execution traces of the leader, docs/benchmarks.md); rounded up.
const waveBytesPerFire = 8 << 10

// collectAheadOfWave is the scheduler's AheadOfWave: with a wave of fires
// planned ahead, it collects garbage now if the heap could not take the
// wave's allocations without the collector starting during the wave.
// Started there, the collection's marking and the assists it charges the
// allocating goroutines take CPU from the fires; before the wave they
// take the quiet of the plan-ahead lead.
func collectAheadOfWave(fires int) {
	collect.Ahead(uint64(fires) * waveBytesPerFire)
}
