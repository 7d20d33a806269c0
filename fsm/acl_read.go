package fsm

import (
	"slices"
	"strings"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// ACLToken returns the token whose secret has the SHA-256 secretHash,
// without the hash, or false.
func (f *FSM) ACLToken(secretHash []byte) (*pb.AclToken, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	accessor, ok := f.st.acl.byHash[string(secretHash)]
	if !ok {
		return nil, false
	}
	t, _ := f.st.acl.token(accessor)
	return publicToken(t), true
}

// ACLTokens returns every token by name, without hashes.
func (f *FSM) ACLTokens() []*pb.AclToken {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*pb.AclToken, 0, f.st.acl.tokens.Len())
	f.st.acl.tokens.Ascend(func(it tokenItem) bool {
		out = append(out, publicToken(it.token))
		return true
	})
	slices.SortFunc(out, func(a, b *pb.AclToken) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// ACLBootstrapped reports whether `acl bootstrap` has run: it works once.
func (f *FSM) ACLBootstrapped() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.acl.bootstrapped
}
