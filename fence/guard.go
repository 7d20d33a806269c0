package fence

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Guard admits a fencing token for a scope only if it is at least the highest token it has
// admitted for that scope, and records it, atomically. A scope is usually the job name: the
// set of writes that a newer attempt must be able to shut out.
type Guard interface {
	// Admit returns nil and records token if token >= Highest(scope); otherwise it returns
	// a *StaleError and records nothing. An equal token is admitted: one attempt may write
	// several times.
	Admit(ctx context.Context, scope string, token uint64) error
	// Highest returns the highest token admitted for scope, 0 if none.
	Highest(ctx context.Context, scope string) (uint64, error)
}

var (
	// ErrStale matches every *StaleError.
	ErrStale = errors.New("fence: stale fencing token")
	// ErrZeroToken refuses token 0, which raftcron never issues (its counter starts at 1).
	ErrZeroToken = errors.New("fence: token 0 is never issued")
	// ErrEmptyScope refuses an empty scope: every write must belong to one.
	ErrEmptyScope = errors.New("fence: empty scope")
)

// StaleError says that a token was refused because a higher one was already admitted.
type StaleError struct {
	Scope   string
	Token   uint64 // the refused token
	Highest uint64 // the highest admitted for Scope when it was refused
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: stale fencing token %d for scope %q: %d already admitted",
		e.Token, e.Scope, e.Highest)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

func checkAdmit(ctx context.Context, scope string, token uint64) error {
	if scope == "" {
		return ErrEmptyScope
	}
	if token == 0 {
		return ErrZeroToken
	}
	return ctx.Err()
}

// MemoryGuard is a Guard held in memory: for tests, and for services whose state does not
// outlive the process either. Safe for concurrent use.
type MemoryGuard struct {
	// mu makes the compare and the store of Admit one step; it guards highest.
	mu      sync.Mutex
	highest map[string]uint64
	// observe, when set (tests only), sees every decision in the order mu serialises them.
	observe func(scope string, token uint64, admitted bool)
}

// NewMemoryGuard returns an empty MemoryGuard.
func NewMemoryGuard() *MemoryGuard { return &MemoryGuard{highest: map[string]uint64{}} }

// Admit implements Guard.
func (g *MemoryGuard) Admit(ctx context.Context, scope string, token uint64) error {
	if err := checkAdmit(ctx, scope, token); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.highest[scope]
	if g.observe != nil {
		g.observe(scope, token, token >= h)
	}
	if token < h {
		return &StaleError{Scope: scope, Token: token, Highest: h}
	}
	g.highest[scope] = token
	return nil
}

// Highest implements Guard.
func (g *MemoryGuard) Highest(ctx context.Context, scope string) (uint64, error) {
	if scope == "" {
		return 0, ErrEmptyScope
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.highest[scope], nil
}
