package fsm_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// ledgerHarness holds jobs a and b (overlap allow) with runs created over
// three entries: a-1 and b-2 together, then a-3 (manual, so at a slot
// before a-1's), then b-4, finished.
func ledgerHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.create(withOverlap(testSpec("a"), pb.Overlap_OVERLAP_ALLOW))
	h.create(withOverlap(testSpec("b"), pb.Overlap_OVERLAP_ALLOW))
	slot := h.now.Unix() + 100
	h.fire(slotFire("a", 1, slot+50), slotFire("b", 1, slot))
	h.accepted(manualFire("a", "", false))
	h.finish(h.accepted(slotFire("b", 1, slot+10)).GetRun(), stSucceeded, h.now)
	return h
}

func TestListRunsNewestFirst(t *testing.T) {
	h := ledgerHarness(t)
	cases := []struct {
		job   string
		limit int
		want  string
	}{
		{"", 0, "b-4,a-3,b-2,a-1"}, // a-1 and b-2 share a creation time: by id, descending
		{"", 2, "b-4,a-3"},
		{"", -1, "b-4,a-3,b-2,a-1"},
		{"a", 0, "a-3,a-1"},
		{"b", 1, "b-4"},
		{"ghost", 0, ""},
	}
	for _, tc := range cases {
		if got := strings.Join(ids(h.f.ListRuns(tc.job, tc.limit)), ","); got != tc.want {
			t.Errorf("ListRuns(%q, %d) = %s, want %s", tc.job, tc.limit, got, tc.want)
		}
	}
}

func TestOpenRunsAreSortedByJobSlotAndID(t *testing.T) {
	h := ledgerHarness(t)
	// a-3's slot is before a-1's.
	if got := strings.Join(ids(h.f.OpenRuns()), ","); got != "a-3,a-1,b-2" {
		t.Fatalf("OpenRuns = %s, want a-3,a-1,b-2", got)
	}
}

func TestRunReadsReturnClones(t *testing.T) {
	h := ledgerHarness(t)
	want := proto.Clone(h.run("a-1"))
	wantStatus := proto.Clone(h.status("a"))

	h.run("a-1").GetAttempts()[0].Token = 99
	h.f.ListRuns("", 0)[3].Attempts = nil
	h.f.OpenRuns()[1].GetAttempts()[0].NodeId = "mutated"
	h.status("a").OpenRunIds[0] = "mutated"
	h.job("a").GetStatus().CursorUnix = 1

	if got := h.run("a-1"); !proto.Equal(got, want) {
		t.Fatalf("stored run changed through a returned value: %v, want %v", got, want)
	}
	if got := h.status("a"); !proto.Equal(got, wantStatus) {
		t.Fatalf("stored status changed through a returned value: %v, want %v", got, wantStatus)
	}
	if _, err := h.f.Run("nope"); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("Run(nope) = %v, want ErrNotFound", err)
	}
}

func TestStoredJobsWalksACaptureInNameOrder(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"charlie", "alpha", "bravo"} {
		h.create(testSpec(name))
	}
	h.accepted(slotFire("bravo", 1, h.nextSlot("bravo")))
	var names []string
	h.f.StoredJobs(func(sj fsm.StoredJob) bool {
		name := sj.Job.GetSpec().GetName()
		names = append(names, name)
		// fn runs under no lock: it may read and even apply.
		st := h.status(name)
		if !proto.Equal(st, sj.Status) {
			t.Errorf("stored job %s has status %v, JobStatus says %v", name, sj.Status, st)
		}
		if name == "alpha" {
			h.create(testSpec("alpha2"))
		}
		return true
	})
	if strings.Join(names, ",") != "alpha,bravo,charlie" {
		t.Fatalf("walked %v, want alpha,bravo,charlie: the capture predates alpha2", names)
	}
	n := 0
	h.f.StoredJobs(func(fsm.StoredJob) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatalf("fn called %d times after returning false at 2", n)
	}
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	f       *fsm.FSM
	names   [][]string
	runs    [][]*pb.Run
	origins []fsm.Origin // of every call, in order
}

func (r *recorder) JobsChanged(o fsm.Origin, names []string) {
	if r.f != nil {
		_ = r.f.JobCount() // calling back must not deadlock
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, names)
	r.origins = append(r.origins, o)
}

func (r *recorder) RunsChanged(o fsm.Origin, runs []*pb.Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, runs)
	r.origins = append(r.origins, o)
}

func (r *recorder) take() ([][]string, [][]*pb.Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, runs := r.names, r.runs
	r.names, r.runs, r.origins = nil, nil, nil
	return n, runs
}

func (r *recorder) takeOrigins() []fsm.Origin {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.origins
	r.names, r.runs, r.origins = nil, nil, nil
	return o
}

func TestObserverSeesWhatEachEntryChanged(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{f: h.f}
	h.f.SetObserver(rec)

	h.create(withOverlap(testSpec("bravo"), pb.Overlap_OVERLAP_CANCEL_OTHER))
	h.create(testSpec("alpha"))
	if names, runs := rec.take(); len(names) != 2 || names[0][0] != "bravo" || names[1][0] != "alpha" || len(runs) != 0 {
		t.Fatalf("after two creates: names %v runs %d, want [[bravo] [alpha]] and no runs", names, len(runs))
	}

	slot := h.now.Unix() + 60
	first := h.accepted(slotFire("bravo", 1, slot))
	rec.take()
	// One entry: a run of alpha, bravo's open run cancelled, a new one, and
	// a refused fire.
	h.fire(slotFire("bravo", 1, slot+60), slotFire("alpha", 1, slot), slotFire("ghost", 1, slot))
	names, runs := rec.take()
	if len(names) != 1 || !slices.Equal(names[0], []string{"alpha", "bravo"}) {
		t.Fatalf("JobsChanged %v, want one call with [alpha bravo]", names)
	}
	if len(runs) != 1 || len(runs[0]) != 3 {
		t.Fatalf("RunsChanged %v, want one call with 3 runs", runs)
	}
	got := runs[0]
	if got[0].GetId() != first.GetRunId() || got[0].GetState() != stCancelled || got[1].GetJob() != "bravo" ||
		got[1].GetState() != stDispatched || got[2].GetJob() != "alpha" {
		t.Fatalf("RunsChanged runs %v, want bravo's cancelled run, bravo's new run, alpha's run", got)
	}

	// Nothing changed, nothing said.
	h.refused(slotFire("bravo", 1, slot), fsm.ReasonDuplicate)
	h.mustFail(deleteCmd("ghost", 0), codeNotFound, fsm.ErrNotFound)
	if names, runs := rec.take(); len(names)+len(runs) != 0 {
		t.Fatalf("entries that changed nothing notified %v %v", names, runs)
	}

	// A restore names every job before and after it.
	other := newHarness(t)
	other.create(testSpec("charlie"))
	if err := restore(h.f, persist(t, other.f)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if names, _ := rec.take(); len(names) != 1 || !slices.Equal(names[0], []string{"alpha", "bravo", "charlie"}) {
		t.Fatalf("JobsChanged after restore %v, want [[alpha bravo charlie]]", names)
	}

	h.f.SetObserver(nil)
	h.create(testSpec("delta"))
	if names, _ := rec.take(); len(names) != 0 {
		t.Fatal("a removed observer was called")
	}
}

// Each change says where it came from: the command's kind, and for a
// FireBatch the leader that proposed it, so that a scheduler can tell its
// own entries coming back from every other change.
func TestObserverHearsWhereEachChangeCameFrom(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.f.SetObserver(rec)
	put := fsm.Origin{Kind: "put_job"}
	fire := fsm.Origin{Kind: fsm.KindFireBatch, Leader: leaderID}

	h.create(testSpec("alpha"))
	if got := rec.takeOrigins(); !slices.Equal(got, []fsm.Origin{put}) {
		t.Fatalf("a create said %v, want %v", got, put)
	}
	r := h.accepted(slotFire("alpha", 1, h.now.Unix()+60))
	if got := rec.takeOrigins(); !slices.Equal(got, []fsm.Origin{fire, fire}) {
		t.Fatalf("a fire said %v, want %v for its job and its run", got, fire)
	}
	h.mustOK(cancelCmd(r.GetRunId()))
	cancel := fsm.Origin{Kind: "cancel_run"}
	if got := rec.takeOrigins(); !slices.Equal(got, []fsm.Origin{cancel, cancel}) {
		t.Fatalf("a cancel said %v, want %v for its job and its run", got, cancel)
	}

	other := newHarness(t)
	other.create(testSpec("bravo"))
	if err := restore(h.f, persist(t, other.f)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got, want := rec.takeOrigins(), (fsm.Origin{Kind: fsm.KindRestore}); !slices.Equal(got, []fsm.Origin{want}) {
		t.Fatalf("a restore said %v, want %v", got, want)
	}
}
