package fence

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

var (
	// ErrDuplicate says the run's idempotency key was already recorded: its effect was
	// applied before, so this delivery must be acknowledged and not applied again.
	ErrDuplicate = errors.New("fence: duplicate idempotency key")
	// ErrUnrecorded says the effect was applied but its idempotency key could not be
	// recorded: a re-delivery of the run would apply it again.
	ErrUnrecorded = errors.New("fence: effect applied but idempotency key not recorded")
	// ErrNoGuard refuses a Fence without a Guard.
	ErrNoGuard = errors.New("fence: Fence.Guard is nil")
)

// Fence puts a Guard and a Dedupe around an effect. Dedupe may be nil (fencing only).
//
// The honest limit: Guard, Dedupe and the effect are three stores. Do serialises
// deliveries of the same key inside this process and records the key only after the effect
// succeeded, but a crash between the effect and the record leaves the effect applied and
// the key unrecorded, and a re-delivery applies it again. Only a write that admits the
// token, checks the key and applies the effect in one transaction closes that gap:
// BoltFence.Update for bbolt, the conditional UPDATE of docs/fencing.md for SQL.
//
// A Fence must not be copied after first use.
type Fence struct {
	Guard  Guard
	Dedupe Dedupe

	locks keyLocks
}

// NewFence returns a Fence over g and d (d may be nil).
func NewFence(g Guard, d Dedupe) *Fence { return &Fence{Guard: g, Dedupe: d} }

// Do applies effect for run at most once per idempotency key, and only while run's token
// is the highest admitted for scope ("" means run.Job):
//
//  1. admit the token: a *StaleError if a higher one was admitted, effect not called.
//     The fence comes first, so a stale leader is told it is stale (409) even when the
//     run it sends was already applied by a newer attempt;
//  2. if the key was recorded: ErrDuplicate, effect not called (the token stays admitted:
//     it is a newer attempt of a run already applied);
//  3. call effect with a context carrying run (RunFromContext); its error is returned and
//     the key is not recorded, so a retry may apply it;
//  4. record the key, even if ctx was cancelled meanwhile: the effect happened. A failure
//     here is returned wrapped in ErrUnrecorded.
//
// Concurrent calls with the same key wait for each other (or for ctx), so that two
// deliveries of one run in flight at once cannot both apply it.
func (f *Fence) Do(ctx context.Context, run Run, scope string, effect func(context.Context) error) error {
	if f.Guard == nil {
		return ErrNoGuard
	}
	if scope == "" {
		scope = run.Job
	}
	key := run.IdempotencyKey
	if f.Dedupe != nil {
		if key == "" {
			return ErrEmptyKey
		}
		unlock, err := f.locks.lock(ctx, key)
		if err != nil {
			return err
		}
		defer unlock()
	}
	if err := f.Guard.Admit(ctx, scope, run.Token); err != nil {
		return err
	}
	if f.Dedupe != nil {
		seen, err := f.Dedupe.Seen(ctx, key)
		if err != nil {
			return err
		}
		if seen {
			return ErrDuplicate
		}
	}
	if err := effect(NewContext(ctx, run)); err != nil {
		return err
	}
	if f.Dedupe == nil {
		return nil
	}
	if err := f.Dedupe.Record(context.WithoutCancel(ctx), key); err != nil {
		return fmt.Errorf("%w: %q: %w", ErrUnrecorded, key, err)
	}
	return nil
}

// keyLocks is a set of per-key mutexes that a waiter can give up on. The zero value is
// ready to use.
type keyLocks struct {
	// mu guards m; an entry lives while refs > 0, and its slot (a one-place channel) is
	// full while some caller holds the key.
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	slot chan struct{}
	refs int
}

func (l *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*keyLock{}
	}
	e := l.m[key]
	if e == nil {
		e = &keyLock{slot: make(chan struct{}, 1)}
		l.m[key] = e
	}
	e.refs++
	l.mu.Unlock()

	select {
	case e.slot <- struct{}{}:
		return func() { <-e.slot; l.release(key, e) }, nil
	case <-ctx.Done():
		l.release(key, e)
		return nil, ctx.Err()
	}
}

func (l *keyLocks) release(key string, e *keyLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.refs--
	if e.refs == 0 {
		delete(l.m, key)
	}
}
