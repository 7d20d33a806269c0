package api

import (
	"crypto/sha256"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// liveCluster is one FSM that is both what SnapshotService saves and
// what it restores into, as on a real leader, with the audit trail on.
type liveCluster struct {
	store *fsmStore
	snap  pb.SnapshotServiceClient
}

func newLiveCluster(t *testing.T) *liveCluster {
	t.Helper()
	live := fsm.New()
	c := &liveCluster{store: &fsmStore{f: live}}
	c.must(t, fsm.SetClusterVersion(fsm.CommandVersion))
	c.must(t, &pb.Command{Kind: &pb.Command_SetAudit{SetAudit: &pb.SetAuditCommand{Limit: 100}}})
	c.snap = snapshotClient(t, &snapNode{leader: true, src: live, dst: live}, t.TempDir())
	return c
}

func (c *liveCluster) must(t *testing.T, cmd *pb.Command) {
	t.Helper()
	cmd.ProposedAtUnixNano = testNow.UnixNano()
	res, err := c.store.Apply(testCtx(t), cmd)
	if err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Fatalf("apply %v: %v, %v", cmd, res, err)
	}
}

func aclTokenCmd(name string, role pb.AclRole, bootstrap bool) *pb.Command {
	hash := sha256.Sum256([]byte("secret-" + name))
	tok := &pb.AclToken{AccessorId: "acc-" + name, Name: name, Role: role, SecretHash: hash[:]}
	if bootstrap {
		return &pb.Command{Kind: &pb.Command_BootstrapAcl{BootstrapAcl: &pb.BootstrapAclCommand{Token: tok}}}
	}
	return &pb.Command{Kind: &pb.Command_CreateAclToken{CreateAclToken: &pb.CreateAclTokenCommand{Token: tok}}}
}

func (c *liveCluster) create(t *testing.T, name string) {
	t.Helper()
	c.must(t, &pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Mode: pb.PutMode_PUT_MODE_CREATE, Spec: validSpec(name)}}})
}

func tokenNames(f *fsm.FSM) []string {
	var names []string
	for _, t := range f.ACLTokens() {
		names = append(names, t.GetName())
	}
	return names
}

// TestRestoreKeepsTheLiveTokensAndTrail: a restore rolls back jobs, runs
// and counter only; a token deleted after the file was taken stays
// deleted, and the audit trail keeps what happened since and records the
// restore.
func TestRestoreKeepsTheLiveTokensAndTrail(t *testing.T) {
	c := newLiveCluster(t)
	c.must(t, aclTokenCmd("root", pb.AclRole_ACL_ROLE_MANAGEMENT, true))
	c.must(t, aclTokenCmd("leaked", pb.AclRole_ACL_ROLE_WRITE, false))
	c.create(t, "nightly")
	file, _, err := save(t, c.snap)
	if err != nil {
		t.Fatal(err)
	}
	c.must(t, &pb.Command{Kind: &pb.Command_DeleteAclToken{DeleteAclToken: &pb.DeleteAclTokenCommand{AccessorId: "acc-leaked"}}})
	c.create(t, "later")
	live := c.store.f
	before := live.ListAudit(fsm.AuditQuery{})

	if _, err := upload(t, c.snap, file); err != nil {
		t.Fatalf("RestoreSnapshot: %v", err)
	}
	if names := tokenNames(live); len(names) != 1 || names[0] != "root" {
		t.Fatalf("tokens after the restore: %v, want only root: a deleted token must stay deleted", names)
	}
	if _, err := live.Job("later"); err == nil {
		t.Fatal("the job created after the file was taken survived the restore")
	}
	if _, err := live.Job("nightly"); err != nil {
		t.Fatalf("the file's job: %v", err)
	}
	after := live.ListAudit(fsm.AuditQuery{})
	if len(after) != len(before)+1 {
		t.Fatalf("%d audit records after the restore, want the %d from before it and one more", len(after), len(before))
	}
	for i, r := range before {
		if after[i+1].GetSeq() != r.GetSeq() || after[i+1].GetAction() != r.GetAction() {
			t.Fatalf("audit record %d is %v after the restore, was %v", i, after[i+1], r)
		}
	}
	if got := after[0]; got.GetAction() != "snapshot_restore" || got.GetSeq() != before[0].GetSeq()+1 {
		t.Fatalf("newest audit record %v, want snapshot_restore numbered after %d", got, before[0].GetSeq())
	}
}

// TestRestoreRefusesAFileFromBeforeBootstrap: a file taken before the
// live cluster bootstrapped its ACLs would reopen bootstrap; it is refused
// and nothing changes.
func TestRestoreRefusesAFileFromBeforeBootstrap(t *testing.T) {
	c := newLiveCluster(t)
	c.create(t, "nightly")
	file, _, err := save(t, c.snap)
	if err != nil {
		t.Fatal(err)
	}
	c.must(t, aclTokenCmd("root", pb.AclRole_ACL_ROLE_MANAGEMENT, true))
	c.create(t, "later")
	want := c.store.f.StateHash()

	_, err = upload(t, c.snap, file)
	st := wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(st.Message(), "bootstrap") || !strings.Contains(st.Message(), "force") {
		t.Fatalf("refusal %q, want it to name bootstrap and force", st.Message())
	}
	if c.store.f.StateHash() != want {
		t.Fatal("a refused restore changed the state")
	}

	res, err := uploadForced(testCtx(t), c.snap, file, true)
	if err != nil || !res.GetKeptLiveState() {
		t.Fatalf("forced RestoreSnapshot: %v, %v; want it done, the live state kept", res, err)
	}
	if !c.store.f.ACLBootstrapped() || len(c.store.f.ACLTokens()) != 1 {
		t.Fatal("a forced restore of a file from before bootstrap reopened bootstrap")
	}
	rec := c.store.f.ListAudit(fsm.AuditQuery{Limit: 1})[0]
	if rec.GetAction() != fsm.AuditSnapshotRestore || rec.GetPrincipal() != Anonymous {
		t.Fatalf("newest audit record %v, want the forced restore", rec)
	}
}

// TestRestoreNeedsManagementAndRecordsWho: force or not, a restore is the
// management role's, and its audit record names the token.
func TestRestoreNeedsManagementAndRecordsWho(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	write := h.token(t, mgmt, "deployer", pb.AclRole_ACL_ROLE_WRITE, nil)
	file, _, err := save(t, h.snap) // refused: no token
	wantCode(t, err, codes.Unauthenticated)
	stream, err := h.snap.SaveSnapshot(with(ctx, mgmt), &pb.SaveSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			break
		}
		file = append(file, resp.GetChunk()...)
	}
	_, err = uploadForced(with(ctx, write), h.snap, file, true)
	wantCode(t, err, codes.PermissionDenied)
	if _, err := uploadForced(with(ctx, mgmt), h.snap, file, true); err != nil {
		t.Fatalf("management restore: %v", err)
	}
	names := tokenNames(h.store.f)
	rec := h.snapDst.ListAudit(fsm.AuditQuery{Limit: 1})
	if len(rec) != 1 || rec[0].GetAction() != fsm.AuditSnapshotRestore || !slices.Contains(names, rec[0].GetPrincipal()) {
		t.Fatalf("newest audit record %v, want the restore by the management token (tokens %v)", rec, names)
	}
}
