package server

import (
	"errors"
	"fmt"
	"math"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/jobspec"
	"github.com/raftcron/raftcron/scheduler"
)

// DefaultMaxConcurrentStreams bounds the calls one client connection may
// have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; gRPC's own
// default is unlimited). Beyond it a client's further calls wait for one to
// end: no connection can hold more goroutines and buffers than this.
const DefaultMaxConcurrentStreams = 1000

// Names of the Limits fields in a *cluster.ConfigError.
const (
	FieldMaxJobs              = "Limits.MaxJobs"
	FieldMaxSpecBytes         = "Limits.MaxSpecBytes"
	FieldMaxHeaders           = "Limits.MaxHeaders"
	FieldMaxEnv               = "Limits.MaxEnv"
	FieldMaxArgs              = "Limits.MaxArgs"
	FieldMaxOpenRuns          = "Limits.MaxOpenRuns"
	FieldMaxWatchers          = "Limits.MaxWatchers"
	FieldMaxConcurrentStreams = "Limits.MaxConcurrentStreams"
	FieldMaxChainDepth        = "Limits.MaxChainDepth"
	FieldMaxChainFanout       = "Limits.MaxChainFanout"
	FieldMaxBackfillSlots     = "Limits.MaxBackfillSlots"
)

// Limits bound what a node holds and serves. A zero field takes the default
// of the package that enforces it, so tests and callers set only what they
// mean to change. MaxJobs travels with every put and the FSM enforces it,
// so it should be set alike on every node.
type Limits struct {
	// MaxJobs is the most jobs the registry holds (api.DefaultMaxJobs).
	MaxJobs int
	// MaxSpecBytes, MaxHeaders, MaxEnv and MaxArgs bound one job spec
	// (jobspec.DefaultLimits).
	MaxSpecBytes int
	MaxHeaders   int
	MaxEnv       int
	MaxArgs      int
	// MaxOpenRuns caps one overlap-allow job's open runs, and one
	// check-in job's (scheduler.DefaultMaxOpenRuns).
	MaxOpenRuns int
	// MaxWatchers caps the WatchRuns streams served at once
	// (api.DefaultMaxWatchers).
	MaxWatchers int
	// MaxConcurrentStreams caps the calls one client connection has open
	// at once (DefaultMaxConcurrentStreams).
	MaxConcurrentStreams int
	// MaxChainDepth and MaxChainFanout bound the graph of dependencies
	// (api.DefaultMaxChainDepth, api.DefaultMaxChainFanout). Like MaxJobs
	// they travel with every put: set them alike on every node.
	MaxChainDepth  int
	MaxChainFanout int
	// MaxBackfillSlots caps the slots of one backfill
	// (api.DefaultMaxBackfillSlots); the start carries it, so it should be
	// set alike on every node.
	MaxBackfillSlots int
}

// validate refuses values no owner could take: negative ones, and ones
// beyond what gRPC's uint32 settings and a 32-bit count can hold.
func (l Limits) validate() error {
	var errs []error
	for _, f := range []struct {
		field string
		v     int
	}{
		{FieldMaxJobs, l.MaxJobs},
		{FieldMaxSpecBytes, l.MaxSpecBytes},
		{FieldMaxHeaders, l.MaxHeaders},
		{FieldMaxEnv, l.MaxEnv},
		{FieldMaxArgs, l.MaxArgs},
		{FieldMaxOpenRuns, l.MaxOpenRuns},
		{FieldMaxWatchers, l.MaxWatchers},
		{FieldMaxConcurrentStreams, l.MaxConcurrentStreams},
		{FieldMaxChainDepth, l.MaxChainDepth},
		{FieldMaxChainFanout, l.MaxChainFanout},
		{FieldMaxBackfillSlots, l.MaxBackfillSlots},
	} {
		if f.v < 0 || f.v > math.MaxInt32 {
			errs = append(errs, &cluster.ConfigError{
				Field: f.field,
				Rule:  fmt.Sprintf("%d is not from 0 (the default) to %d", f.v, math.MaxInt32),
				Err:   cluster.ErrInvalidConfig,
			})
		}
	}
	return errors.Join(errs...)
}

// jobs is what the JobService admits.
func (l Limits) jobs() api.Limits {
	return api.Limits{
		MaxJobs:          uint64(l.MaxJobs),
		Spec:             jobspec.Limits{SpecBytes: l.MaxSpecBytes, Headers: l.MaxHeaders, Env: l.MaxEnv, Args: l.MaxArgs},
		MaxOpenRuns:      uint32(l.maxOpenRuns()),
		MaxBackfillSlots: uint64(l.MaxBackfillSlots),
		MaxChainDepth:    uint32(l.MaxChainDepth),
		MaxChainFanout:   uint32(l.MaxChainFanout),
	}
}

// maxOpenRuns is the scheduler's limit, which the API applies to check-in
// runs too.
func (l Limits) maxOpenRuns() int {
	if l.MaxOpenRuns > 0 {
		return l.MaxOpenRuns
	}
	return scheduler.DefaultMaxOpenRuns
}

func (l Limits) maxConcurrentStreams() uint32 {
	if l.MaxConcurrentStreams > 0 {
		return uint32(l.MaxConcurrentStreams)
	}
	return DefaultMaxConcurrentStreams
}
