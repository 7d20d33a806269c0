package cluster

import "github.com/hashicorp/raft"

// logCache is Raft's LogCache, holding copies of the entries it is given.
// On the leader Raft stores a proposal's entry by a pointer into the
// proposal's future, beside the FSM's response: a cache of those pointers
// kept the last 512 entries' results alive (a FireBatch's run clones, a
// put_job's cloned job), about 1 KB per fire and per job, until 512 later
// entries evicted them. A copy holds the entry alone; its data is the
// entry's own, shared, not copied.
type logCache struct {
	*raft.LogCache
}

func newLogCache(capacity int, store raft.LogStore) (logCache, error) {
	c, err := raft.NewLogCache(capacity, store)
	return logCache{c}, err
}

func (c logCache) StoreLog(l *raft.Log) error {
	return c.StoreLogs([]*raft.Log{l})
}

func (c logCache) StoreLogs(logs []*raft.Log) error {
	copies := make([]raft.Log, len(logs))
	ptrs := make([]*raft.Log, len(logs))
	for i, l := range logs {
		copies[i] = *l
		ptrs[i] = &copies[i]
	}
	return c.LogCache.StoreLogs(ptrs)
}
