package fsm_test

import (
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/raftcron/raftcron/fsm"
)

// TestReadsRunConcurrentlyWithApply is meant for -race: readers page through
// the registry and the ledger, walk the stored jobs, take hashes and
// persist snapshots, and change the values they get back, while Apply runs
// a generated log with an observer installed.
func TestReadsRunConcurrentlyWithApply(t *testing.T) {
	const entries = 300
	f := fsm.New()
	f.SetObserver(&recorder{f: f})
	gen := newCommandGen(11)
	gen.view = f

	done := make(chan struct{})
	errs := make(chan string, 8)
	var wg sync.WaitGroup
	read := func() {
		defer wg.Done()
		for round := 0; round < 100000; round++ {
			select {
			case <-done:
				return
			default:
			}
			if msg := readRound(f); msg != "" {
				errs <- msg
				return
			}
		}
	}
	for range 2 {
		wg.Add(1)
		go read()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			select {
			case <-done:
				return
			default:
			}
			snap, err := f.Snapshot()
			if err != nil {
				errs <- err.Error()
				return
			}
			if err := snap.Persist(&memSink{}); err != nil {
				errs <- err.Error()
				return
			}
		}
	}()

	for i := range entries {
		applyLog(t, f, &raft.Log{Index: uint64(i + 1), Data: gen.next()})
	}
	close(done)
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}

// readRound reads the whole registry once and reports any inconsistency.
func readRound(f *fsm.FSM) string {
	_ = f.StateHash()
	_ = f.FencingToken()
	_ = f.JobCount()
	if j, err := f.Job("alpha"); err == nil {
		j.GetSpec().Labels["mutated"] = "by reader"
		j.Version = 0
		j.GetStatus().OpenRunIds = append(j.GetStatus().GetOpenRunIds(), "mutated")
	}
	if st, err := f.JobStatus("beta"); err == nil {
		st.CursorUnix = 0
	}
	if msg := readLedger(f); msg != "" {
		return msg
	}
	q := fsm.ListQuery{Limit: 2}
	prev := ""
	for page := 0; page < 10; page++ {
		jobs, next := f.ListJobs(q)
		for _, j := range jobs {
			name := j.GetSpec().GetName()
			if name <= prev {
				return "ListJobs out of order: " + name + " after " + prev
			}
			if j.GetVersion() == 0 || j.GetGeneration() == 0 {
				return "ListJobs returned a job without version or generation: " + name
			}
			prev = name
			j.GetSpec().Schedule = "mutated by reader"
		}
		if next == "" {
			return ""
		}
		q.After = next
	}
	return "ListJobs paging over at most 6 names did not end in 10 pages"
}

// readLedger reads the run views once and reports any inconsistency.
func readLedger(f *fsm.FSM) string {
	for _, r := range f.OpenRuns() {
		if st := r.GetState(); st != stDispatched && st != stRetrying {
			return "OpenRuns returned a run in state " + st.String()
		}
		r.Attempts = nil
	}
	runs := f.ListRuns("", 5)
	for i, r := range runs {
		if i > 0 && r.GetCreatedAtUnixNano() > runs[i-1].GetCreatedAtUnixNano() {
			return "ListRuns not newest first: " + r.GetId()
		}
		if got, err := f.Run(r.GetId()); err == nil {
			got.Reason = "mutated by reader"
		}
		r.Id = "mutated"
	}
	prev, bad := "", ""
	f.StoredJobs(func(e fsm.StoredJob) bool {
		name := e.Job.GetSpec().GetName()
		switch {
		case prev != "" && name <= prev:
			bad = "StoredJobs out of order: " + name + " after " + prev
		case e.Status == nil:
			bad = "StoredJobs without a status: " + name
		}
		prev = name
		return bad == ""
	})
	return bad
}
