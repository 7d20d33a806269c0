package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/jobspec"
	"github.com/raftcron/raftcron/scheduler"
	"github.com/raftcron/raftcron/server"
)

// Flags of serve that bound what a node holds and serves.
const (
	flagMaxJobs              = "max-jobs"
	flagMaxSpecBytes         = "max-spec-bytes"
	flagMaxHeaders           = "max-headers"
	flagMaxEnv               = "max-env"
	flagMaxArgs              = "max-args"
	flagMaxOpenRuns          = "max-open-runs"
	flagMaxWatchers          = "max-watchers"
	flagMaxConcurrentStreams = "max-concurrent-streams"
	flagMaxChainDepth        = "max-chain-depth"
	flagMaxChainFanout       = "max-chain-fanout"
	flagMaxBackfillSlots     = "max-backfill-slots"
)

func addLimitFlags(fs *pflag.FlagSet) {
	fs.Int(flagMaxJobs, api.DefaultMaxJobs, "most jobs the registry holds; a create beyond it fails (ResourceExhausted)")
	fs.Int(flagMaxSpecBytes, jobspec.DefaultLimits.SpecBytes, "most bytes one job spec takes, encoded")
	fs.Int(flagMaxHeaders, jobspec.DefaultLimits.Headers, "most http.headers of one job")
	fs.Int(flagMaxEnv, jobspec.DefaultLimits.Env, "most env variables of one job's command (exec or worker)")
	fs.Int(flagMaxArgs, jobspec.DefaultLimits.Args, "most command entries (program and arguments) of one job's exec or worker target")
	fs.Int(flagMaxOpenRuns, scheduler.DefaultMaxOpenRuns, "most runs one overlap-allow job has open (later slots are recorded missed, open_runs_limit), or one check-in job (a later start is refused)")
	fs.Int(flagMaxWatchers, api.DefaultMaxWatchers, "most WatchRuns streams this node serves at once")
	fs.Int(flagMaxConcurrentStreams, server.DefaultMaxConcurrentStreams, "most gRPC calls one client connection has open at once; more wait")
	fs.Int(flagMaxChainDepth, api.DefaultMaxChainDepth, "longest chain of jobs (after) the registry holds, counted in jobs; a job that would make one longer is refused (FailedPrecondition)")
	fs.Int(flagMaxChainFanout, api.DefaultMaxChainFanout, "most jobs that may run after one job; one more is refused (FailedPrecondition)")
	fs.Int(flagMaxBackfillSlots, api.DefaultMaxBackfillSlots, "most slots one backfill (job backfill) may hold; a larger range is refused")
}

// parseLimits reads each limit from its flag. A flag must name a count: the
// zero that server.Limits takes as "the default" is what leaving the flag
// out means.
func parseLimits(k *koanf.Koanf) (server.Limits, []error) {
	var l server.Limits
	var errs []error
	for _, f := range []struct {
		flag string
		dst  *int
	}{
		{flagMaxJobs, &l.MaxJobs},
		{flagMaxSpecBytes, &l.MaxSpecBytes},
		{flagMaxHeaders, &l.MaxHeaders},
		{flagMaxEnv, &l.MaxEnv},
		{flagMaxArgs, &l.MaxArgs},
		{flagMaxOpenRuns, &l.MaxOpenRuns},
		{flagMaxWatchers, &l.MaxWatchers},
		{flagMaxConcurrentStreams, &l.MaxConcurrentStreams},
		{flagMaxChainDepth, &l.MaxChainDepth},
		{flagMaxChainFanout, &l.MaxChainFanout},
		{flagMaxBackfillSlots, &l.MaxBackfillSlots},
	} {
		v, err := positiveInt(k, f.flag)
		if err != nil {
			errs = append(errs, err)
		}
		*f.dst = v
	}
	return l, errs
}

// positiveInt reads a count from a flag, the environment or the file: a
// whole number from 1 to 2^31-1.
func positiveInt(k *koanf.Koanf, key string) (int, error) {
	raw := strings.TrimSpace(fmt.Sprint(k.Get(key)))
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt32 {
		return 0, fmt.Errorf("--%s: %q is not a whole number from 1 to %d", key, raw, math.MaxInt32)
	}
	return int(n), nil
}
