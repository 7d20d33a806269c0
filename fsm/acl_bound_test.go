package fsm_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// workerToken is a worker token bound to pools.
func workerToken(name string, pools ...string) *pb.AclToken {
	t := aclToken(name, pb.AclRole_ACL_ROLE_WORKER, nil)
	t.Pools = pools
	return t
}

func withTTL(c *pb.Command, ttl time.Duration) *pb.Command {
	c.GetCreateAclToken().Ttl = durationpb.New(ttl)
	return c
}

// A node of the previous release (command version 2) would drop a token's
// pools, cap and expiry and keep a token that works everywhere for ever:
// a create_acl_token that sets any of them is of version 3.
func TestTokenBindingsAndExpiryAreCommandVersion3(t *testing.T) {
	capped := aclToken("c", pb.AclRole_ACL_ROLE_WORKER, nil)
	capped.MaxConcurrency = 4
	stamped := aclToken("e", pb.AclRole_ACL_ROLE_READ, nil)
	stamped.ExpiresAt = timestamppb.New(baseTime)
	for name, c := range map[string]*pb.Command{
		"pools":           createTokenCmd(workerToken("w", "batch")),
		"max_concurrency": createTokenCmd(capped),
		"ttl":             withTTL(createTokenCmd(aclToken("r", pb.AclRole_ACL_ROLE_READ, nil)), time.Hour),
		"expires_at":      createTokenCmd(stamped),
	} {
		if v := fsm.VersionOf(c); v != 3 {
			t.Errorf("VersionOf(create_acl_token with %s) = %d, want 3", name, v)
		}
	}
}

// From cluster version 3 a worker token names its pools; below it the FSM
// applies create_acl_token as version 2 did, which bound nothing.
func TestWorkerTokenNeedsAPoolFromVersion3(t *testing.T) {
	old := newHarnessAt(t, 2)
	old.mustOK(createTokenCmd(aclToken("legacy", pb.AclRole_ACL_ROLE_WORKER, nil)))

	h := newHarness(t)
	r := h.mustFail(createTokenCmd(aclToken("w", pb.AclRole_ACL_ROLE_WORKER, nil)), codeInvalid, fsm.ErrInvalid)
	if !strings.Contains(r.GetMessage(), "pools") {
		t.Fatalf("a worker token without a pool refused with %q, want it to name pools", r.GetMessage())
	}
	capped := workerToken("w", "batch", "reports")
	capped.MaxConcurrency = 8
	h.mustOK(createTokenCmd(capped))
	got, _ := h.f.ACLToken(secretHash("secret-w"))
	if strings.Join(got.GetPools(), ",") != "batch,reports" || got.GetMaxConcurrency() != 8 {
		t.Fatalf("stored worker token %v, want pools batch,reports and max_concurrency 8", got)
	}
}

func TestTokenBindingsAreChecked(t *testing.T) {
	readWithPool := aclToken("r", pb.AclRole_ACL_ROLE_READ, nil)
	readWithPool.Pools = []string{"batch"}
	mgmtWithCap := aclToken("m", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)
	mgmtWithCap.MaxConcurrency = 3
	for name, tc := range map[string]struct {
		cmd      *pb.Command
		mentions string
	}{
		"pools on a read token":         {createTokenCmd(readWithPool), "only worker tokens"},
		"a cap on a management token":   {createTokenCmd(mgmtWithCap), "only worker tokens"},
		"a pool without a name":         {createTokenCmd(workerToken("w", "")), "without a name"},
		"a pool twice":                  {createTokenCmd(workerToken("w", "batch", "batch")), "twice"},
		"a ttl under a second":          {withTTL(createTokenCmd(aclToken("r", pb.AclRole_ACL_ROLE_READ, nil)), time.Millisecond), "ttl"},
		"a negative ttl":                {withTTL(createTokenCmd(aclToken("r", pb.AclRole_ACL_ROLE_READ, nil)), -time.Hour), "ttl"},
		"a worker token without a pool": {createTokenCmd(aclToken("w", pb.AclRole_ACL_ROLE_WORKER, nil)), "pools"},
		"pools on the bootstrap token":  {bootstrapCmd(mgmtWithCap), "only worker tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			before := h.f.StateHash()
			r := h.mustFail(tc.cmd, codeInvalid, fsm.ErrInvalid)
			if !strings.Contains(r.GetMessage(), tc.mentions) {
				t.Fatalf("refused with %q, want it to mention %s", r.GetMessage(), tc.mentions)
			}
			if h.f.StateHash() != before {
				t.Fatal("a refused token changed the state")
			}
		})
	}
}

// The expiry is the proposer's time plus the ttl, so every node stores the
// same instant; the FSM never judges it (no clock), the API does.
func TestTTLStampsAnExpiryFromTheProposersClock(t *testing.T) {
	h := newHarness(t)
	stale := aclToken("r", pb.AclRole_ACL_ROLE_READ, nil)
	stale.ExpiresAt = timestamppb.New(baseTime.Add(-time.Hour)) // only the ttl decides
	h.mustOK(withTTL(createTokenCmd(stale), 90*time.Minute))
	got, _ := h.f.ACLToken(secretHash("secret-r"))
	if want := h.now.Add(90 * time.Minute); !got.GetExpiresAt().AsTime().Equal(want) {
		t.Fatalf("expires_at %v, want %v (the command's time plus the ttl)", got.GetExpiresAt().AsTime(), want)
	}
	h.mustOK(createTokenCmd(aclToken("forever", pb.AclRole_ACL_ROLE_READ, nil)))
	if got, _ := h.f.ACLToken(secretHash("secret-forever")); got.GetExpiresAt() != nil {
		t.Fatalf("a token without a ttl expires at %v", got.GetExpiresAt().AsTime())
	}
	restored := fsm.New()
	if err := restore(restored, persist(t, h.f)); err != nil || restored.StateHash() != h.f.StateHash() {
		t.Fatalf("restored: %v, same hash %v", err, restored.StateHash() == h.f.StateHash())
	}
}

// An expiring management token does not count as the one that keeps the
// cluster manageable: once it expired nobody could manage ACLs again.
func TestTheLastManagementTokenWithoutExpiryStays(t *testing.T) {
	h := newHarness(t)
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	h.mustOK(withTTL(createTokenCmd(aclToken("oncall", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)), time.Hour))
	r := h.mustFail(deleteTokenCmd("acc-root"), codeInvalid, fsm.ErrInvalid)
	if !strings.Contains(r.GetMessage(), "without an expiry") {
		t.Fatalf("refused with %q, want it to say the token is the last without an expiry", r.GetMessage())
	}
	h.mustOK(deleteTokenCmd("acc-oncall"))
}

type revocations struct {
	recorder
	origins []fsm.Origin
}

func (r *revocations) TokensRevoked(o fsm.Origin) { r.origins = append(r.origins, o) }

// Whoever holds what a token opened (streams) learns of a deletion, and of
// a restore, which may drop any token; creating one revokes nothing.
func TestDeletedTokensAreReportedToATokenObserver(t *testing.T) {
	h := newHarness(t)
	h.mustOK(bootstrapCmd(aclToken("root", pb.AclRole_ACL_ROLE_MANAGEMENT, nil)))
	snap := persist(t, h.f)
	obs := &revocations{}
	h.f.SetObserver(obs)
	h.mustOK(createTokenCmd(aclToken("ci", pb.AclRole_ACL_ROLE_READ, nil)))
	h.mustFail(deleteTokenCmd("acc-nobody"), codeNotFound, fsm.ErrNotFound)
	if len(obs.origins) != 0 {
		t.Fatalf("revocations reported %v before any token was deleted", obs.origins)
	}
	h.mustOK(deleteTokenCmd("acc-ci"))
	if err := restore(h.f, snap); err != nil {
		t.Fatal(err)
	}
	want := []string{"delete_acl_token", fsm.KindRestore}
	if len(obs.origins) != 2 || obs.origins[0].Kind != want[0] || obs.origins[1].Kind != want[1] {
		t.Fatalf("revocations reported %v, want %v", obs.origins, want)
	}
}
