package fsm

import (
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Observer learns what each applied entry changed, so that the scheduler
// can re-plan the jobs concerned without scanning the registry. Its methods
// are called synchronously at the end of Apply, from the goroutine that
// drives Raft and under no FSM lock: they may read the FSM but must not
// block, or the whole log stalls. Both get the change's Origin, so that a
// proposer can tell its own entries coming back from everyone else's.
type Observer interface {
	// JobsChanged names the jobs whose spec or status changed, or that were
	// created or deleted, sorted and without repeats. After a Restore it
	// names every job before and after it.
	JobsChanged(o Origin, names []string)
	// RunsChanged carries every run the entry created or changed, each
	// once, as it stands after the entry. They are the stored values,
	// shared with the state and every other observer: an observer must
	// never change them (stored values are never changed in place, so
	// reading them needs no lock). Handing them out uncopied keeps an
	// Apply on a node where nobody watches runs from copying every run.
	RunsChanged(o Origin, runs []*pb.Run)
}

// TokenObserver is an Observer that also learns when ACL tokens may have
// been revoked: a token deleted, or a snapshot restored in place of the
// state. It is told which command did it, not which tokens: it checks the
// tokens it holds against the state (ACLToken), which holds only the live
// ones. Called like the Observer's methods: it must not block.
type TokenObserver interface {
	TokensRevoked(o Origin)
}

// Origin is what a change came from: the command applied, or a snapshot
// restored.
type Origin struct {
	// Kind is the command's kind, the name of its Command.kind field
	// (KindFireBatch, "put_job", ...), or KindRestore.
	Kind string
	// Leader is the node that proposed a FireBatch (its leader_id); empty
	// for every other kind.
	Leader string
}

// Origin kinds an observer tells apart.
const (
	// KindFireBatch is a leader's FireBatch: what its scheduler planned.
	KindFireBatch = "fire_batch"
	// KindRestore is a snapshot restored in place of the whole state.
	KindRestore = "restore"
	// KindRecordProgress is remote workers' progress: it changes runs'
	// attempts, never what the scheduler plans.
	KindRecordProgress = "record_progress"
)

// originOf is the Origin of the command c, whose kind is fd.
func originOf(c *pb.Command, fd protoreflect.FieldDescriptor) Origin {
	return Origin{Kind: string(fd.Name()), Leader: c.GetFireBatch().GetLeaderId()}
}

// SetObserver installs o (nil removes it). Set it before Raft starts
// applying, so that no change goes unseen.
func (f *FSM) SetObserver(o Observer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observer = o
}

// AlertObserver is an Observer that also learns that an entry raised
// alerts or recorded their delivery (the leader's alerter sends what is
// pending). It is called like the others: after the lock, never blocking.
type AlertObserver interface {
	AlertsChanged(o Origin)
}

// changes collects what the entry being applied changed. Only dirty is kept
// when nobody observes, so an unobserved Apply pays nothing for it.
type changes struct {
	dirty bool
	track bool
	// revoked: a token was deleted.
	revoked bool
	// alerts: alerts were raised or recorded, or a channel or rule changed.
	alerts bool
	names  []string
	runs   []*pb.Run // stored values; later ones of the same id win
}

// The methods accept a nil receiver: state outside Apply (Restore building a
// fresh state) has no change log.

func (c *changes) touch() {
	if c != nil {
		c.dirty = true
	}
}

func (c *changes) tokensRevoked() {
	if c != nil {
		c.dirty = true
		c.revoked = true
	}
}

func (c *changes) isDirty() bool {
	return c != nil && c.dirty
}

func (c *changes) jobChanged(name string) {
	if c == nil {
		return
	}
	c.dirty = true
	if c.track {
		c.names = append(c.names, name)
	}
}

func (c *changes) alertChanged() {
	if c != nil {
		c.dirty, c.alerts = true, true
	}
}

func (c *changes) runChanged(r *pb.Run) {
	if c == nil {
		return
	}
	c.dirty = true
	if c.track {
		c.runs = append(c.runs, r)
	}
}

// notify hands the changes to o, as coming from origin. It runs after the
// lock is released: the runs collected are stored values, immutable, so
// reading them needs no lock.
func (c *changes) notify(o Observer, origin Origin) {
	if o == nil || c == nil {
		return
	}
	if len(c.names) > 0 {
		names := slices.Clone(c.names)
		slices.Sort(names)
		o.JobsChanged(origin, slices.Compact(names))
	}
	if len(c.runs) > 0 {
		o.RunsChanged(origin, lastOfEach(c.runs))
	}
	if c.revoked {
		notifyRevoked(o, origin)
	}
	if ao, ok := o.(AlertObserver); ok && c.alerts {
		ao.AlertsChanged(origin)
	}
}

// notifyRevoked tells o that tokens may have been revoked, if it listens.
func notifyRevoked(o Observer, origin Origin) {
	if to, ok := o.(TokenObserver); ok {
		to.TokensRevoked(origin)
	}
}

// lastOfEach keeps one run per id, the last value, in order of first change.
func lastOfEach(runs []*pb.Run) []*pb.Run {
	at := make(map[string]int, len(runs))
	out := make([]*pb.Run, 0, len(runs))
	for _, r := range runs {
		if i, ok := at[r.GetId()]; ok {
			out[i] = r
			continue
		}
		at[r.GetId()] = len(out)
		out = append(out, r)
	}
	return out
}
