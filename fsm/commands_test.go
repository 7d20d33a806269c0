package fsm_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	codeOK        = pb.ResultCode_RESULT_CODE_OK
	codeNotFound  = pb.ResultCode_RESULT_CODE_NOT_FOUND
	codeExists    = pb.ResultCode_RESULT_CODE_ALREADY_EXISTS
	codeMismatch  = pb.ResultCode_RESULT_CODE_VERSION_MISMATCH
	codeMalformed = pb.ResultCode_RESULT_CODE_MALFORMED
)

func TestCreateStoresJobWithFirstGenerationAndProposerTime(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("billing")
	r := h.mustOK(createCmd(spec))

	if !r.GetCreated() || !r.GetChanged() {
		t.Fatalf("created=%v changed=%v, want both true", r.GetCreated(), r.GetChanged())
	}
	j := r.GetJob()
	want := timestamppb.New(h.now)
	switch {
	case !proto.Equal(j.GetSpec(), spec):
		t.Fatalf("stored spec %v, want %v", j.GetSpec(), spec)
	case j.GetGeneration() != 1 || j.GetVersion() != 1:
		t.Fatalf("generation %d version %d, want 1 and 1", j.GetGeneration(), j.GetVersion())
	case !proto.Equal(j.GetCreatedAt(), want) || !proto.Equal(j.GetUpdatedAt(), want):
		t.Fatalf("created_at %v updated_at %v, want both %v", j.GetCreatedAt(), j.GetUpdatedAt(), want)
	case j.GetModifyIndex() != h.index:
		t.Fatalf("modify_index %d, want the entry's index %d", j.GetModifyIndex(), h.index)
	}
	if got := h.job("billing"); !proto.Equal(got, j) {
		t.Fatalf("Job() = %v, want the result's job %v", got, j)
	}
	if h.f.JobCount() != 1 || h.f.AppliedIndex() != h.index {
		t.Fatalf("JobCount %d AppliedIndex %d, want 1 and %d", h.f.JobCount(), h.f.AppliedIndex(), h.index)
	}
}

func TestCreateDuplicateIsRefused(t *testing.T) {
	h := newHarness(t)
	first := h.mustOK(createCmd(testSpec("billing"))).GetJob()
	other := testSpec("billing")
	other.Schedule = "@hourly"
	h.mustFail(createCmd(other), codeExists, fsm.ErrAlreadyExists)
	if got := h.job("billing"); !proto.Equal(got, first) {
		t.Fatalf("job after refused create = %v, want %v", got, first)
	}
}

func TestUpdateBumpsVersionAndKeepsCreatedAt(t *testing.T) {
	h := newHarness(t)
	created := h.mustOK(createCmd(testSpec("billing"))).GetJob()
	spec := testSpec("billing")
	spec.Labels["tier"] = "gold"
	r := h.mustOK(updateCmd(spec, 1))
	j := r.GetJob()
	switch {
	case !r.GetChanged() || r.GetCreated():
		t.Fatalf("changed=%v created=%v, want true and false", r.GetChanged(), r.GetCreated())
	case j.GetVersion() != 2 || j.GetGeneration() != 1:
		t.Fatalf("version %d generation %d, want 2 and 1 (labels are not part of the target)", j.GetVersion(), j.GetGeneration())
	case !proto.Equal(j.GetCreatedAt(), created.GetCreatedAt()):
		t.Fatalf("created_at moved from %v to %v", created.GetCreatedAt(), j.GetCreatedAt())
	case !proto.Equal(j.GetUpdatedAt(), timestamppb.New(h.now)):
		t.Fatalf("updated_at %v, want %v", j.GetUpdatedAt(), h.now)
	case j.GetModifyIndex() != h.index:
		t.Fatalf("modify_index %d, want %d", j.GetModifyIndex(), h.index)
	case !proto.Equal(j.GetSpec(), spec):
		t.Fatalf("spec %v, want %v", j.GetSpec(), spec)
	}
}

func TestUpdateWithStaleVersionIsRefused(t *testing.T) {
	h := newHarness(t)
	h.mustOK(createCmd(testSpec("billing")))
	spec := testSpec("billing")
	spec.Schedule = "@daily"
	h.mustOK(updateCmd(spec, 1))

	stale := testSpec("billing")
	stale.Schedule = "@hourly"
	r := h.mustFail(updateCmd(stale, 1), codeMismatch, fsm.ErrVersionMismatch)
	t.Logf("message: %s", r.GetMessage())
	if got := h.job("billing").GetSpec().GetSchedule(); got != "@daily" {
		t.Fatalf("schedule %q after a refused update, want @daily", got)
	}
	// An identical spec with a stale version is refused too: the version
	// check comes first.
	h.mustFail(updateCmd(spec, 1), codeMismatch, fsm.ErrVersionMismatch)
	h.mustFail(putCmd(pb.PutMode_PUT_MODE_UPSERT, spec, 7), codeMismatch, fsm.ErrVersionMismatch)
}

func TestUpdateOfMissingJobIsNotFound(t *testing.T) {
	h := newHarness(t)
	h.mustFail(updateCmd(testSpec("ghost"), 0), codeNotFound, fsm.ErrNotFound)
	if h.f.JobCount() != 0 {
		t.Fatalf("JobCount %d, want 0", h.f.JobCount())
	}
}

func TestUpsertCreatesThenUpdates(t *testing.T) {
	h := newHarness(t)
	r := h.mustOK(upsertCmd(testSpec("billing")))
	if !r.GetCreated() || !r.GetChanged() || r.GetJob().GetVersion() != 1 {
		t.Fatalf("first upsert: %v, want created, changed, version 1", r)
	}
	spec := testSpec("billing")
	spec.Http.Url = "http://billing.test/v2"
	r = h.mustOK(upsertCmd(spec))
	j := r.GetJob()
	if r.GetCreated() || !r.GetChanged() || j.GetVersion() != 2 || j.GetGeneration() != 2 {
		t.Fatalf("second upsert: %v, want changed only, version 2, generation 2", r)
	}
}

func TestUpsertOfMissingJobWithExpectedVersionIsMismatch(t *testing.T) {
	h := newHarness(t)
	h.mustFail(putCmd(pb.PutMode_PUT_MODE_UPSERT, testSpec("ghost"), 3), codeMismatch, fsm.ErrVersionMismatch)
}

func TestIdenticalPutChangesNothing(t *testing.T) {
	for _, mode := range []pb.PutMode{pb.PutMode_PUT_MODE_UPDATE, pb.PutMode_PUT_MODE_UPSERT} {
		t.Run(mode.String(), func(t *testing.T) {
			h := newHarness(t)
			stored := h.mustOK(createCmd(testSpec("billing"))).GetJob()
			before := h.f.StateHash()
			r := h.mustOK(putCmd(mode, testSpec("billing"), 1))
			if r.GetChanged() || r.GetCreated() {
				t.Fatalf("identical put: changed=%v created=%v, want both false", r.GetChanged(), r.GetCreated())
			}
			if !proto.Equal(r.GetJob(), stored) {
				t.Fatalf("identical put returned %v, want the stored job %v", r.GetJob(), stored)
			}
			if h.f.StateHash() != before {
				t.Fatal("identical put changed the state")
			}
		})
	}
}

func TestGenerationBumpsOnlyWhenScheduleTimezoneOrTargetChange(t *testing.T) {
	cases := []struct {
		name string
		edit func(*pb.JobSpec)
		bump bool
	}{
		{"schedule", func(s *pb.JobSpec) { s.Schedule = "@hourly" }, true},
		{"timezone", func(s *pb.JobSpec) { s.Timezone = "Europe/Berlin" }, true},
		{"http url", func(s *pb.JobSpec) { s.Http.Url = "http://other.test/" }, true},
		{"http header", func(s *pb.JobSpec) { s.Http.Headers["X-Team"] = "ops" }, true},
		{"http body", func(s *pb.JobSpec) { s.Http.Body = "{}" }, true},
		{"exec instead of http", func(s *pb.JobSpec) {
			s.Http = nil
			s.Exec = &pb.ExecTarget{Command: []string{"/bin/true"}}
		}, true},
		{"labels", func(s *pb.JobSpec) { s.Labels["env"] = "prod" }, false},
		{"catchup", func(s *pb.JobSpec) { s.Catchup.Window = durationpb.New(time.Hour) }, false},
		{"overlap", func(s *pb.JobSpec) { s.Overlap = pb.Overlap_OVERLAP_ALLOW }, false},
		{"retry", func(s *pb.JobSpec) { s.Retry = &pb.Retry{MaxAttempts: 3} }, false},
		{"deadline", func(s *pb.JobSpec) { s.Deadline = durationpb.New(time.Minute) }, false},
		{"paused", func(s *pb.JobSpec) { s.Paused = true }, false},
		{"history limit", func(s *pb.JobSpec) { s.HistoryLimit = 20 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustOK(createCmd(testSpec("billing")))
			spec := testSpec("billing")
			tc.edit(spec)
			j := h.mustOK(updateCmd(spec, 0)).GetJob()
			want := uint64(1)
			if tc.bump {
				want = 2
			}
			if j.GetGeneration() != want || j.GetVersion() != 2 {
				t.Fatalf("generation %d version %d, want %d and 2", j.GetGeneration(), j.GetVersion(), want)
			}
		})
	}
}

func TestPauseAndResume(t *testing.T) {
	h := newHarness(t)
	h.mustOK(createCmd(testSpec("billing")))

	r := h.mustOK(pauseCmd("billing", true, "maintenance"))
	j := r.GetJob()
	if !r.GetChanged() || !j.GetSpec().GetPaused() || j.GetSpec().GetPauseNote() != "maintenance" ||
		j.GetVersion() != 2 || j.GetGeneration() != 1 || j.GetModifyIndex() != h.index {
		t.Fatalf("pause: %v, want paused with note, version 2, generation 1, modify_index %d", r, h.index)
	}

	before := h.f.StateHash()
	if r := h.mustOK(pauseCmd("billing", true, "maintenance")); r.GetChanged() || r.GetJob().GetVersion() != 2 {
		t.Fatalf("second identical pause: %v, want unchanged at version 2", r)
	}
	if h.f.StateHash() != before {
		t.Fatal("identical pause changed the state")
	}

	if r := h.mustOK(pauseCmd("billing", true, "longer maintenance")); !r.GetChanged() ||
		r.GetJob().GetSpec().GetPauseNote() != "longer maintenance" || r.GetJob().GetVersion() != 3 {
		t.Fatalf("pause with a new note: %v, want changed note at version 3", r)
	}

	r = h.mustOK(pauseCmd("billing", false, "ignored"))
	if !r.GetChanged() || r.GetJob().GetSpec().GetPaused() || r.GetJob().GetSpec().GetPauseNote() != "" {
		t.Fatalf("resume: %v, want running with the note cleared", r)
	}
	if r := h.mustOK(pauseCmd("billing", false, "")); r.GetChanged() {
		t.Fatalf("resume of a running job: %v, want unchanged", r)
	}
	h.mustFail(pauseCmd("ghost", true, ""), codeNotFound, fsm.ErrNotFound)
}

func TestDelete(t *testing.T) {
	h := newHarness(t)
	h.mustOK(createCmd(testSpec("billing")))
	h.mustOK(createCmd(testSpec("reports")))

	h.mustFail(deleteCmd("billing", 9), codeMismatch, fsm.ErrVersionMismatch)
	r := h.mustOK(deleteCmd("billing", 1))
	if !r.GetChanged() || r.GetJob() != nil {
		t.Fatalf("delete: %v, want changed and no job", r)
	}
	if _, err := h.f.Job("billing"); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("Job after delete: %v, want ErrNotFound", err)
	}
	if h.f.JobCount() != 1 {
		t.Fatalf("JobCount %d, want 1", h.f.JobCount())
	}
	h.mustOK(deleteCmd("reports", 0))
	if h.f.JobCount() != 0 {
		t.Fatalf("JobCount %d, want 0", h.f.JobCount())
	}
}

func TestDeleteOfMissingJobIsNotFound(t *testing.T) {
	h := newHarness(t)
	h.mustFail(deleteCmd("ghost", 0), codeNotFound, fsm.ErrNotFound)
	h.mustFail(deleteCmd("ghost", 4), codeNotFound, fsm.ErrNotFound)
}

func TestRecreateAfterDeleteContinuesGeneration(t *testing.T) {
	h := newHarness(t)
	h.mustOK(createCmd(testSpec("billing")))
	spec := testSpec("billing")
	spec.Schedule = "@hourly"
	h.mustOK(updateCmd(spec, 0)) // generation 2
	h.mustOK(deleteCmd("billing", 0))

	r := h.mustOK(upsertCmd(testSpec("billing")))
	j := r.GetJob()
	if !r.GetCreated() || j.GetGeneration() != 3 || j.GetVersion() != 1 {
		t.Fatalf("re-create: %v, want created at generation 3 (old 2 + 1), version 1", r)
	}
	h.mustOK(deleteCmd("billing", 0))
	if g := h.mustOK(createCmd(testSpec("billing"))).GetJob().GetGeneration(); g != 4 {
		t.Fatalf("second re-create at generation %d, want 4", g)
	}
	// billing's tombstones were collected at once (nothing was open): a
	// name without one starts above every generation retired so far.
	if g := h.mustOK(createCmd(testSpec("fresh"))).GetJob().GetGeneration(); g != 4 {
		t.Fatalf("a name without a tombstone starts at generation %d, want 4 (above the retired 3)", g)
	}
}

func TestResultsAndReadsAreClones(t *testing.T) {
	h := newHarness(t)
	r := h.mustOK(createCmd(testSpec("billing")))
	stored := h.job("billing")
	want := proto.Clone(stored)

	r.GetJob().GetSpec().Schedule = "mutated"
	r.GetJob().Version = 99
	stored.GetSpec().Labels["team"] = "mutated"
	jobs, _ := h.f.ListJobs(fsm.ListQuery{})
	jobs[0].GetSpec().Http.Url = "mutated"

	if got := h.job("billing"); !proto.Equal(got, want) {
		t.Fatalf("stored job changed through a returned value: %v, want %v", got, want)
	}
}

func TestPutWithUnspecifiedModeIsMalformed(t *testing.T) {
	h := newHarness(t)
	h.mustFail(putCmd(pb.PutMode_PUT_MODE_UNSPECIFIED, testSpec("billing"), 0), codeMalformed, fsm.ErrMalformed)
	h.mustFail(putCmd(pb.PutMode(42), testSpec("billing"), 0), codeMalformed, fsm.ErrMalformed)
}
