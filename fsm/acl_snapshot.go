package fsm

import (
	"bufio"
	"fmt"
	"hash"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// writeTokens writes the ACL token records, in accessor order, after the
// runs. A snapshot of a cluster without ACLs has none, so it reads as the
// snapshots written before tokens existed.
func (a *aclState) writeTokens(put func(proto.Message) error) error {
	var err error
	a.tokens.Ascend(func(it tokenItem) bool {
		if err = put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_AclToken{AclToken: it.token}}); err != nil {
			err = fmt.Errorf("ACL token %q: %w", it.accessor, err)
		}
		return err == nil
	})
	return err
}

// readTokens reads count token records into a, checking each as a command
// would and their order and uniqueness.
func (a *aclState) readTokens(r *bufio.Reader, dec protodelim.UnmarshalOptions, count uint64) error {
	prev := ""
	for i := uint64(0); i < count; i++ {
		var rec pb.SnapshotRecord
		if err := dec.UnmarshalFrom(r, &rec); err != nil {
			return fmt.Errorf("ACL token record %d of %d: %w", i+1, count, truncated(err))
		}
		t := rec.GetAclToken()
		if t == nil {
			return fmt.Errorf("record %d of %d ACL tokens is not a token", i+1, count)
		}
		if err := checkToken("acl_token", t); err != nil {
			return fmt.Errorf("ACL token record %d of %d: %w", i+1, count, err)
		}
		if i > 0 && t.GetAccessorId() <= prev {
			return fmt.Errorf("ACL token %q follows %q: tokens must be in strictly increasing accessor order", t.GetAccessorId(), prev)
		}
		if err := a.checkUnique(t); err != nil {
			return fmt.Errorf("ACL token record %d of %d: %w", i+1, count, err)
		}
		prev = t.GetAccessorId()
		a.put(t)
	}
	return nil
}

// hashTokens adds the ACL state to a state hash. A state that never had
// ACLs adds nothing, so its hash is what it was before tokens existed.
func (a *aclState) hashTokens(h hash.Hash, m *marshaler) {
	if !a.bootstrapped && a.tokens.Len() == 0 {
		return
	}
	bootstrapped := uint64(0)
	if a.bootstrapped {
		bootstrapped = 1
	}
	writeUint(h, bootstrapped)
	writeUint(h, uint64(a.tokens.Len()))
	a.tokens.Ascend(func(it tokenItem) bool {
		m.write(it.token, "ACL token", it.accessor)
		return true
	})
}
