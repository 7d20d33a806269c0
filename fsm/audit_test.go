package fsm_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func setAuditCmd(limit uint32, enableOnly bool) *pb.Command {
	return &pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: limit, EnableOnly: enableOnly}}}
}

// newAuditHarness is a harness whose trail is on, keeping limit records.
func newAuditHarness(t *testing.T, limit uint32) *harness {
	t.Helper()
	h := newHarness(t)
	h.mustOK(setAuditCmd(limit, false))
	return h
}

// audit lists the whole trail, newest first.
func (h *harness) audit() []*pb.AuditRecord {
	return h.f.ListAudit(fsm.AuditQuery{})
}

func (h *harness) lastAudit() *pb.AuditRecord {
	h.t.Helper()
	recs := h.audit()
	if len(recs) == 0 {
		h.t.Fatal("the audit trail is empty")
	}
	return recs[0]
}

// changeLines renders changes as the CLI shows them.
func changeLines(cs []*pb.AuditChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.GetField() + ": " + c.GetBefore() + " → " + c.GetAfter()
	}
	return out
}

func wantChanges(t *testing.T, r *pb.AuditRecord, want ...string) {
	t.Helper()
	got := changeLines(r.GetChanges())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes of %s record:\n%s\nwant:\n%s", r.GetAction(), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAuditIsOffUntilSetAudit(t *testing.T) {
	h := newHarness(t)
	h.mustOK(as("alice", nil, createCmd(testSpec("billing"))))
	if recs := h.audit(); len(recs) != 0 || h.f.AuditLimit() != 0 {
		t.Fatalf("trail off: %d records, limit %d; want none", len(recs), h.f.AuditLimit())
	}
	// Builds from before the trail read the snapshot of a state without one.
	if v := snapshotHeader(t, h.f).GetFormatVersion(); v != 1 {
		t.Fatalf("snapshot format %d without a trail, want 1", v)
	}
}

func TestAuditRecordsEveryRegistryWrite(t *testing.T) {
	h := newAuditHarness(t, 100)
	start := h.lastAudit()
	if start.GetAction() != fsm.AuditSetLimit || start.GetPrincipal() != fsm.PrincipalSystem {
		t.Fatalf("first record %v, want the trail's start by %s", start, fsm.PrincipalSystem)
	}
	wantChanges(t, start, "limit: 0 → 100")

	spec := testSpec("billing")
	h.mustOK(as("alice", nil, createCmd(spec)))
	r := h.lastAudit()
	if r.GetAction() != fsm.AuditCreate || r.GetPrincipal() != "alice" || r.GetJob() != "billing" ||
		r.GetVersionBefore() != 0 || r.GetVersionAfter() != 1 || r.GetAtUnixNano() != h.now.UnixNano() ||
		r.GetIndex() != h.index || r.GetSeq() != start.GetSeq()+1 {
		t.Fatalf("create record %v, want alice's create 0→1 at the entry's time, index and the next seq", r)
	}
	if !strings.Contains(strings.Join(changeLines(r.GetChanges()), "\n"), `schedule: "" → "*/5 * * * *"`) {
		t.Fatalf("create record changes %v, want the schedule set", changeLines(r.GetChanges()))
	}

	next := cloneSpec(spec)
	next.Schedule = "0 * * * *"
	h.mustOK(as("bob", nil, updateCmd(next, 1)))
	r = h.lastAudit()
	if r.GetAction() != fsm.AuditUpdate || r.GetPrincipal() != "bob" || r.GetVersionBefore() != 1 || r.GetVersionAfter() != 2 {
		t.Fatalf("update record %v, want bob's update 1→2", r)
	}
	wantChanges(t, r, `schedule: "*/5 * * * *" → "0 * * * *"`)

	count := len(h.audit())
	h.mustOK(as("bob", nil, upsertCmd(cloneSpec(next)))) // identical: changes nothing
	h.mustFail(as("bob", nil, updateCmd(testSpec("ghost"), 0)), codeNotFound, fsm.ErrNotFound)
	if got := len(h.audit()); got != count {
		t.Fatalf("a no-op and a refused write added %d records", got-count)
	}

	h.mustOK(as("carol", nil, pauseCmd("billing", true, "maintenance")))
	r = h.lastAudit()
	if r.GetAction() != fsm.AuditPause || r.GetPrincipal() != "carol" || r.GetVersionAfter() != 3 {
		t.Fatalf("pause record %v", r)
	}
	wantChanges(t, r, "paused: false → true", `pause_note: "" → "maintenance"`)
	h.mustOK(as("carol", nil, pauseCmd("billing", false, "")))
	if r = h.lastAudit(); r.GetAction() != fsm.AuditResume || r.GetVersionBefore() != 3 || r.GetVersionAfter() != 4 {
		t.Fatalf("resume record %v", r)
	}

	trigger := ofGeneration(manualFire("billing", "req-1", true), h.job("billing").GetGeneration())
	trigger.Principal = "dave"
	run := h.accepted(trigger).GetRun()
	r = h.lastAudit()
	if r.GetAction() != fsm.AuditTrigger || r.GetPrincipal() != "dave" || r.GetRunId() != run.GetId() ||
		r.GetVersionBefore() != 4 || r.GetVersionAfter() != 4 {
		t.Fatalf("trigger record %v, want dave's trigger of %s", r, run.GetId())
	}
	wantChanges(t, r, "force: false → true")
	count = len(h.audit())
	h.fire(manualFire("billing", "req-1", false)) // the same request: no new run
	if got := len(h.audit()); got != count {
		t.Fatalf("a duplicate trigger added %d records", got-count)
	}

	h.mustOK(as("erin", nil, cancelCmd(run.GetId())))
	if r = h.lastAudit(); r.GetAction() != fsm.AuditCancel || r.GetPrincipal() != "erin" || r.GetRunId() != run.GetId() || r.GetJob() != "billing" {
		t.Fatalf("cancel record %v", r)
	}

	h.mustOK(as("frank", nil, deleteCmd("billing", 0)))
	if r = h.lastAudit(); r.GetAction() != fsm.AuditDelete || r.GetPrincipal() != "frank" ||
		r.GetVersionBefore() != 4 || r.GetVersionAfter() != 0 || len(r.GetChanges()) != 0 {
		t.Fatalf("delete record %v, want frank's delete 4→0", r)
	}

	var actions []string
	for _, r := range h.f.ListAudit(fsm.AuditQuery{Job: "billing"}) {
		actions = append(actions, r.GetAction())
	}
	if got := strings.Join(actions, " "); got != "delete cancel trigger resume pause update create" {
		t.Fatalf("billing's records, newest first: %s", got)
	}
}

func TestAuditDiffHidesSecretsAndIsBounded(t *testing.T) {
	h := newAuditHarness(t, 100)
	spec := testSpec("billing")
	spec.Http.Headers["Authorization"] = "Bearer s3cret"
	spec.Http.Body = `{"password":"hunter2"}`
	h.mustOK(createCmd(spec))
	for _, c := range h.lastAudit().GetChanges() {
		if strings.Contains(c.GetAfter(), "s3cret") || strings.Contains(c.GetAfter(), "hunter2") {
			t.Fatalf("create record shows a secret: %v", c)
		}
	}

	next := cloneSpec(spec)
	next.Http.Headers["Authorization"] = "Bearer n3w"
	next.Http.Timeout = durationpb.New(90 * time.Second)
	next.Labels = map[string]string{"team": "ops", "tier": "1"}
	next.PauseNote = strings.Repeat("é", 100) // 200 bytes
	h.mustOK(updateCmd(next, 0))
	wantChanges(t, h.lastAudit(),
		`http.headers.Authorization: (hidden) → changed`,
		`http.timeout: "30s" → "1m30s"`,
		`pause_note: "" → "`+strings.Repeat("é", 63)+`…`,
		`labels.team: "billing" → "ops"`,
		`labels.tier:  → "1"`, // no such label before
	)

	wide := cloneSpec(next)
	wide.Labels = map[string]string{}
	for i := range 20 {
		wide.Labels[string(rune('a'+i))] = "x"
	}
	h.mustOK(updateCmd(wide, 0))
	cs := h.lastAudit().GetChanges()
	if len(cs) != 16 || cs[15].GetField() != "…" || cs[15].GetAfter() != "7 more fields" {
		t.Fatalf("22 changed fields recorded as %d changes ending %v, want 15 and a count of the rest", len(cs), cs[len(cs)-1])
	}
}

// TestAuditDiffReadsInTheJobFileForm: enums by their job file names,
// durations as Go durations, both for a create (from unset) and an update,
// as `job get -o json` and the JSON API write them.
func TestAuditDiffReadsInTheJobFileForm(t *testing.T) {
	h := newAuditHarness(t, 100)
	spec := testSpec("billing")
	h.mustOK(createCmd(spec))
	created := strings.Join(changeLines(h.lastAudit().GetChanges()), "\n")
	for _, want := range []string{`catchup.policy:  → "all"`, `overlap:  → "skip"`, `delivery:  → "at_least_once"`, `catchup.window:  → "1m0s"`} {
		if !strings.Contains(created, want) {
			t.Errorf("create record:\n%s\nwant %s", created, want)
		}
	}

	next := cloneSpec(spec)
	next.Overlap = pb.Overlap_OVERLAP_BUFFER_ONE
	next.Catchup = &pb.Catchup{Window: durationpb.New(90 * time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_LATEST}
	h.mustOK(updateCmd(next, 0))
	wantChanges(t, h.lastAudit(),
		`catchup.window: "1m0s" → "1h30m0s"`,
		`catchup.policy: "all" → "latest"`,
		`overlap: "skip" → "buffer_one"`,
	)
}

func TestAuditLimitDropsTheOldestAndIsRecorded(t *testing.T) {
	h := newAuditHarness(t, 3)
	for _, name := range []string{"a", "b", "c", "d"} {
		h.mustOK(createCmd(testSpec(name)))
	}
	var jobs []string
	for _, r := range h.audit() {
		jobs = append(jobs, r.GetJob())
	}
	if strings.Join(jobs, ",") != "d,c,b" {
		t.Fatalf("trail of 3 holds %v, want the newest three", jobs)
	}
	if recs := h.f.ListAudit(fsm.AuditQuery{Job: "a"}); len(recs) != 0 {
		t.Fatalf("a dropped record is still listed by job: %v", recs)
	}

	before := h.f.StateHash()
	h.mustOK(setAuditCmd(100, true)) // only switches on: the trail is on
	h.mustOK(setAuditCmd(3, false))  // the limit in force
	if h.f.StateHash() != before || h.f.AuditLimit() != 3 {
		t.Fatal("an enable-only or unchanged set_audit changed the state")
	}

	h.mustOK(as("mallory", nil, setAuditCmd(1, false)))
	recs := h.audit()
	if len(recs) != 1 || recs[0].GetAction() != fsm.AuditSetLimit || recs[0].GetPrincipal() != "mallory" {
		t.Fatalf("after lowering the limit to 1: %v, want only the record of the change", recs)
	}
	wantChanges(t, recs[0], "limit: 3 → 1")
}

func TestSetAuditRefusesALimitOutOfRange(t *testing.T) {
	h := newHarness(t)
	for _, limit := range []uint32{0, fsm.MaxAuditLimit + 1} {
		r := h.mustFail(setAuditCmd(limit, false), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
		if !strings.Contains(r.GetMessage(), "set_audit.limit must be 1 to 100000") {
			t.Fatalf("message %q does not name the field and the rule", r.GetMessage())
		}
	}
}

func TestListAuditFilters(t *testing.T) {
	h := newAuditHarness(t, 100)
	for _, name := range []string{"a", "b", "a", "b", "a"} {
		h.mustOK(upsertCmd(withNote(testSpec(name), h.now.String())))
	}
	all := h.audit()
	if len(all) != 6 { // the trail's start and five writes
		t.Fatalf("%d records, want 6", len(all))
	}
	seqs := func(rs []*pb.AuditRecord) (out []uint64) {
		for _, r := range rs {
			out = append(out, r.GetSeq())
		}
		return out
	}
	for _, tc := range []struct {
		q    fsm.AuditQuery
		want []uint64
	}{
		{fsm.AuditQuery{Limit: 2}, []uint64{6, 5}},
		{fsm.AuditQuery{Before: 4}, []uint64{3, 2, 1}},
		{fsm.AuditQuery{Job: "a"}, []uint64{6, 4, 2}},
		{fsm.AuditQuery{Job: "a", Before: 6, Limit: 1}, []uint64{4}},
		{fsm.AuditQuery{Job: "nope"}, nil},
	} {
		if got := seqs(h.f.ListAudit(tc.q)); !slices.Equal(got, tc.want) {
			t.Errorf("ListAudit(%+v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	// Callers get clones.
	all[0].Principal = "changed"
	if h.lastAudit().GetPrincipal() == "changed" {
		t.Fatal("ListAudit handed out a stored record")
	}
}

func TestAuditSurvivesSnapshotAndRestore(t *testing.T) {
	h := newAuditHarness(t, 3)
	for _, name := range []string{"a", "b", "c", "a"} {
		h.mustOK(as("alice", nil, upsertCmd(withNote(testSpec(name), name+h.now.String()))))
	}
	data := persist(t, h.f)
	if v := snapshotHeader(t, h.f).GetFormatVersion(); v != 2 {
		t.Fatalf("snapshot format %d with a trail, want 2", v)
	}
	g := fsm.New()
	if err := restore(g, data); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if g.StateHash() != h.f.StateHash() {
		t.Fatal("restored state hashes differently")
	}
	for _, q := range []fsm.AuditQuery{{}, {Job: "a"}, {Job: "b"}} {
		want, got := h.f.ListAudit(q), g.ListAudit(q)
		if len(got) != len(want) {
			t.Fatalf("ListAudit(%+v): %d records restored, want %d", q, len(got), len(want))
		}
		for i := range want {
			if !proto.Equal(got[i], want[i]) {
				t.Fatalf("ListAudit(%+v)[%d] = %v, want %v", q, i, got[i], want[i])
			}
		}
	}
	// Both go on alike: the next entry appends the same record to each.
	orig, index, now := h.f, h.index, h.now
	for _, f := range []*fsm.FSM{orig, g} {
		h.f, h.index, h.now = f, index, now
		h.mustOK(createCmd(testSpec("d")))
	}
	if g.StateHash() != orig.StateHash() || g.ListAudit(fsm.AuditQuery{})[0].GetSeq() != 6 {
		t.Fatal("restored and original trails diverge after the next write")
	}
}

func TestRestoreRejectsCorruptAuditTrails(t *testing.T) {
	rec := func(seq uint64) *pb.SnapshotRecord {
		return &pb.SnapshotRecord{Record: &pb.SnapshotRecord_Audit{Audit: &pb.AuditEntry{Record: &pb.AuditRecord{Seq: seq, Action: "create"}}}}
	}
	header := func(limit uint32, seq, count uint64) *pb.SnapshotHeader {
		return &pb.SnapshotHeader{FormatVersion: 2, AuditLimit: limit, AuditSeq: seq, AuditCount: count}
	}
	for _, tc := range []struct {
		name string
		msgs []proto.Message
		want string
	}{
		{"limit 0", []proto.Message{header(0, 0, 0)}, "audit limit 0"},
		{"more than the limit", []proto.Message{header(1, 2, 2), rec(1), rec(2)}, "exceed the limit"},
		{"out of order", []proto.Message{header(5, 3, 2), rec(2), rec(1)}, "strictly increasing"},
		{"beyond the sequence", []proto.Message{header(5, 1, 1), rec(2)}, "beyond the trail's last sequence"},
		{"not an audit record", []proto.Message{header(5, 1, 1), &pb.SnapshotRecord{}}, "not an audit record"},
		{"truncated", []proto.Message{header(5, 2, 2), rec(1)}, "truncated"},
	} {
		h := newHarness(t)
		want := h.f.StateHash()
		err := restore(h.f, stream(t, tc.msgs...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Restore = %v, want an error saying %q", tc.name, err, tc.want)
		}
		if h.f.StateHash() != want {
			t.Errorf("%s: rejected restore changed the state", tc.name)
		}
	}
}

func withNote(spec *pb.JobSpec, note string) *pb.JobSpec {
	spec.PauseNote = note
	return spec
}
