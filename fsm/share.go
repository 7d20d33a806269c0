package fsm

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// shareLimit bounds each table of a sharer; a full table starts over. The
// values worth sharing repeat across many jobs, so a small table finds
// them, and stays in the CPU's cache while unique values (a URL per job)
// pass through it.
const shareLimit = 1 << 12

// sharer lets stored jobs share equal values instead of holding a copy
// each, which is safe because stored values are immutable. It shares the
// strings many jobs repeat — schedule, timezone, target — whole webhook
// targets, which jobs calling one endpoint repeat, the policy messages most
// jobs leave at their defaults (catch-up, retry, deadline:
// the API fills in the catch-up window of every job), and the status of a
// job that never fired, which holds only its creation second, so jobs
// registered in bulk share one status per second until they first fire.
// It is a cache, not state: nothing replicated depends on what it holds,
// and a table that grows past shareLimit is simply emptied.
type sharer struct {
	strs     map[string]string
	fresh    map[freshKey]*pb.JobStatus
	catchups map[string]*pb.Catchup
	https    map[string]*pb.HttpTarget
	retries  map[string]*pb.Retry
	deadline map[string]*durationpb.Duration
	buf      []byte // marshals keys of the message tables
}

func newSharer() *sharer {
	return &sharer{
		strs:     make(map[string]string),
		fresh:    make(map[freshKey]*pb.JobStatus),
		catchups: make(map[string]*pb.Catchup),
		https:    make(map[string]*pb.HttpTarget),
		retries:  make(map[string]*pb.Retry),
		deadline: make(map[string]*durationpb.Duration),
	}
}

// shareMessage returns m, or a message of equal wire form already in table.
func shareMessage[M proto.Message](sh *sharer, table map[string]M, m M) M {
	var err error
	sh.buf, err = proto.MarshalOptions{Deterministic: true}.MarshalAppend(sh.buf[:0], m)
	if err != nil {
		return m
	}
	if v, ok := table[string(sh.buf)]; ok {
		return v
	}
	if len(table) >= shareLimit {
		clear(table)
	}
	table[string(sh.buf)] = m
	return m
}

func (sh *sharer) str(s string) string {
	if s == "" {
		return s
	}
	if v, ok := sh.strs[s]; ok {
		return v
	}
	if len(sh.strs) >= shareLimit {
		clear(sh.strs)
	}
	sh.strs[s] = s
	return s
}

// spec shares the repeated strings of a stored spec it owns.
func (sh *sharer) spec(spec *pb.JobSpec) {
	spec.Schedule = sh.str(spec.GetSchedule())
	spec.Timezone = sh.str(spec.GetTimezone())
	if h := spec.GetHttp(); h != nil {
		h.Url = sh.str(h.GetUrl())
		h.Method = sh.str(h.GetMethod())
		spec.Http = shareMessage(sh, sh.https, h)
	}
	if x := spec.GetExec(); x != nil {
		x.Dir = sh.str(x.GetDir())
		for i, a := range x.GetCommand() {
			x.Command[i] = sh.str(a)
		}
	}
	if spec.Catchup != nil {
		spec.Catchup = shareMessage(sh, sh.catchups, spec.Catchup)
	}
	if spec.Retry != nil {
		spec.Retry = shareMessage(sh, sh.retries, spec.Retry)
	}
	if spec.Deadline != nil {
		spec.Deadline = shareMessage(sh, sh.deadline, spec.Deadline)
	}
}

// status returns st, or an equal status already stored, when st is the
// status of a job that never fired.
func (sh *sharer) status(st *pb.JobStatus) *pb.JobStatus {
	if !neverFired(st) {
		return st
	}
	key := freshKey{cursor: st.GetCursorUnix(), first: st.GetFirstGeneration()}
	if v, ok := sh.fresh[key]; ok {
		return v
	}
	if len(sh.fresh) >= shareLimit {
		clear(sh.fresh)
	}
	sh.fresh[key] = st
	return st
}

// freshKey tells apart the statuses of jobs that never fired: their
// creation second, and their first generation, which is the same for
// every name created after the same deletes (retired + 1).
type freshKey struct {
	cursor int64
	first  uint64
}

// neverFired reports whether st has no field set but the cursor and the
// first generation, the two that make a fresh status's key. A test
// checks that it looks at every field, so a field added later cannot make
// two different statuses look equal.
func neverFired(st *pb.JobStatus) bool {
	return st.GetLatestToken() == 0 && st.GetSucceeded() == 0 && st.GetFailed() == 0 &&
		st.GetMissed() == 0 && st.GetLastRunId() == "" && st.GetLastOutcome() == 0 &&
		st.GetLastFinishedAtUnixNano() == 0 && len(st.GetOpenRunIds()) == 0 &&
		st.GetBufferedSlotUnix() == 0 && st.GetNextFireUnix() == 0 && st.GetDeferredSlotUnix() == 0 &&
		st.GetConsecutiveFailures() == 0 && st.GetLastSuccessUnixNano() == 0 && st.GetLateSlotUnix() == 0 &&
		len(st.GetPendingParents()) == 0 && len(st.GetBufferedParents()) == 0 &&
		st.GetFailuresInARow() == 0 && st.GetSlotsFired() == 0 && st.GetPause() == nil && st.GetBackfill() == nil &&
		len(st.ProtoReflect().GetUnknown()) == 0
}
