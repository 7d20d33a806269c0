package fsm_test

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
)

// manyJobs spans several of the chunks Restore decodes in parallel.
const manyJobs = 2_000

// Jobs decoded in parallel chunks restore exactly: the restored state
// persists to the very bytes it was restored from.
func TestRestoreOfManyJobsIsExact(t *testing.T) {
	h := newHarness(t)
	for i := range manyJobs {
		h.mustOK(createCmd(testSpec(fmt.Sprintf("job-%05d", i))))
	}
	data := persist(t, h.f)
	restored := fsm.New()
	if err := restore(restored, data); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := persist(t, restored); !bytes.Equal(got, data) {
		t.Errorf("restored state persists to %d other bytes than the %d it was restored from", len(got), len(data))
	}
	if restored.StateHash() != h.f.StateHash() || restored.JobCount() != manyJobs {
		t.Errorf("restored %d jobs, or another state hash", restored.JobCount())
	}
}

// A bad record in a later chunk fails the restore with the record's own
// error and leaves the state as it was.
func TestRestoreRefusesABadJobInALaterChunk(t *testing.T) {
	records := func(bad int, with proto.Message) []proto.Message {
		msgs := []proto.Message{header(0, manyJobs, 0)}
		for i := range manyJobs {
			var m proto.Message = jobRecord(fmt.Sprintf("job-%05d", i), 1)
			if i == bad {
				m = with
			}
			msgs = append(msgs, m)
		}
		return msgs
	}
	for _, tc := range []struct {
		name    string
		msgs    []proto.Message
		mention string
	}{
		{"out of order", records(1_500, jobRecord("job-00007", 1)), `job "job-00007" follows "job-01499"`},
		{"not a job", records(1_700, tombstoneRecord("job-01700", 1)), "record 1701 of 2000 jobs is not a job"},
		{"truncated", records(-1, nil)[:1_900], "job record 1900 of 2000: snapshot truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := populated(t)
			refusesRestore(t, h.f, stream(t, tc.msgs...), tc.mention)
		})
	}
}
