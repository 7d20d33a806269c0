package fsm_test

import (
	"strings"
	"testing"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestAuditRecordsEveryACLWriteWithoutSecrets(t *testing.T) {
	h := newAuditHarness(t, 10)
	h.mustOK(as("anonymous", nil, bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil))))
	r := h.lastAudit()
	if r.GetAction() != fsm.AuditACLBootstrap || r.GetPrincipal() != "anonymous" || r.GetJob() != "" {
		t.Fatalf("bootstrap record %v", r)
	}

	h.mustOK(as("root", nil, createTokenCmd(aclToken("ci", pb.AclRole_ACL_ROLE_WRITE, map[string]string{"team": "billing"}))))
	created := h.now
	r = h.lastAudit()
	if r.GetAction() != fsm.AuditACLCreate || r.GetPrincipal() != "root" {
		t.Fatalf("create record %v", r)
	}
	wantChanges(t, r,
		`token.accessor_id:  → "acc-ci"`,
		`token.name:  → "ci"`,
		`token.role:  → "write"`,
		`token.selector.team:  → "billing"`,
		`token.created_at:  → "`+created.Format("2006-01-02T15:04:05Z")+`"`,
	)

	h.mustOK(as("root", nil, deleteTokenCmd("acc-ci")))
	r = h.lastAudit()
	if r.GetAction() != fsm.AuditACLDelete || r.GetPrincipal() != "root" {
		t.Fatalf("delete record %v", r)
	}
	if lines := changeLines(r.GetChanges()); len(lines) != 5 || lines[1] != `token.name: "ci" → ` {
		t.Fatalf("delete record's changes %q, want the deleted token's fields cleared", lines)
	}

	// A refused write leaves no record.
	seq := r.GetSeq()
	h.mustFail(as("root", nil, deleteTokenCmd("acc-ci")), codeNotFound, fsm.ErrNotFound)
	if h.lastAudit().GetSeq() != seq {
		t.Fatal("a refused ACL write was recorded")
	}
	for _, rec := range h.audit() {
		for _, c := range rec.GetChanges() {
			if strings.Contains(c.GetField(), "secret") {
				t.Fatalf("record %d shows %s: the trail must not carry secret hashes", rec.GetSeq(), c.GetField())
			}
		}
	}
}

func TestACLAuditSurvivesSnapshotAndRestore(t *testing.T) {
	h := newAuditHarness(t, 10)
	h.mustOK(as("anonymous", nil, bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil))))
	h.mustOK(as("root", nil, createTokenCmd(aclToken("ci", pb.AclRole_ACL_ROLE_READ, nil))))
	g := fsm.New()
	if err := restore(g, persist(t, h.f)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if g.StateHash() != h.f.StateHash() {
		t.Fatal("restored state hashes differently")
	}
	got, want := changeLines(g.ListAudit(fsm.AuditQuery{})[0].GetChanges()), changeLines(h.lastAudit().GetChanges())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("restored record's changes %q, want %q", got, want)
	}
}

func TestScopedCallerCancelsOnlyRunsInItsScope(t *testing.T) {
	billing := map[string]string{"team": "billing"}
	h := newHarness(t)
	other := testSpec("payroll")
	other.Labels = map[string]string{"team": "hr"}
	gen := h.create(other)
	outside := h.accepted(slotFire("payroll", gen, h.nextSlot("payroll"))).GetRunId()
	gen = h.create(testSpec("invoices")) // team=billing
	inside := h.accepted(slotFire("invoices", gen, h.nextSlot("invoices"))).GetRunId()

	r := h.mustFail(as("ci", billing, cancelCmd(outside)), codeNotFound, fsm.ErrNotFound)
	if want := `run "` + outside + `" not found`; r.GetMessage() != want {
		t.Fatalf("cancel outside the scope says %q, want %q as for a missing run", r.GetMessage(), want)
	}
	if h.run(outside).GetState() != stDispatched {
		t.Fatal("a scoped caller cancelled a run outside its scope")
	}
	h.mustOK(as("ci", billing, cancelCmd(inside)))
	if h.run(inside).GetState() != stCancelled {
		t.Fatal("a scoped caller could not cancel a run in its scope")
	}
}
