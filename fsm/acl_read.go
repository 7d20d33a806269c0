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

// JobMatches reports whether the job exists and its labels include
// selector: whether a caller scoped to selector may see it.
func (f *FSM) JobMatches(name string, selector map[string]string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	j, ok := f.st.job(name)
	return ok && hasLabels(j.GetSpec(), selector)
}

// ListRunsMatching is ListRuns restricted to the runs of live jobs whose
// labels include selector; the runs of deleted jobs match nothing.
func (f *FSM) ListRunsMatching(job string, limit int, selector map[string]string) []*pb.Run {
	if len(selector) == 0 {
		return f.ListRuns(job, limit)
	}
	if job != "" {
		if !f.JobMatches(job, selector) {
			return nil
		}
		return f.ListRuns(job, limit)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	var runs []*pb.Run
	f.st.ix.created.Descend(func(k createdKey) bool {
		if limit > 0 && len(runs) == limit {
			return false
		}
		r, ok := f.st.run(k.id)
		if !ok {
			return true
		}
		if j, live := f.st.job(r.GetJob()); live && hasLabels(j.GetSpec(), selector) {
			runs = append(runs, cloneRun(r))
		}
		return true
	})
	return runs
}
