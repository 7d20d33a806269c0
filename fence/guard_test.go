package fence

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

type observer func(scope string, token uint64, admitted bool)

type guardCase struct {
	name string
	open func(t *testing.T, observe observer) Guard
}

func guardCases() []guardCase {
	return []guardCase{
		{"memory", func(t *testing.T, observe observer) Guard {
			g := NewMemoryGuard()
			g.observe = observe
			return g
		}},
		{"bolt", func(t *testing.T, observe observer) Guard {
			g := openTestBoltGuard(t, filepath.Join(t.TempDir(), "fence.db"))
			g.observe = observe
			return g
		}},
	}
}

// openTestBoltGuard opens a guard without fsync: these tests are about logic, not
// durability against power loss.
func openTestBoltGuard(t *testing.T, path string) *BoltGuard {
	t.Helper()
	g, err := OpenBoltGuard(path)
	if err != nil {
		t.Fatalf("OpenBoltGuard: %v", err)
	}
	g.db.NoSync = true
	t.Cleanup(func() { g.Close() })
	return g
}

func TestGuardAdmitRules(t *testing.T) {
	for _, gc := range guardCases() {
		t.Run(gc.name, func(t *testing.T) {
			ctx := context.Background()
			g := gc.open(t, nil)
			if h, err := g.Highest(ctx, "job"); err != nil || h != 0 {
				t.Fatalf("Highest of a new scope = %d, %v; want 0", h, err)
			}
			if err := g.Admit(ctx, "job", 0); !errors.Is(err, ErrZeroToken) {
				t.Fatalf("Admit(0) = %v, want ErrZeroToken", err)
			}
			if err := g.Admit(ctx, "", 5); !errors.Is(err, ErrEmptyScope) {
				t.Fatalf("Admit(empty scope) = %v, want ErrEmptyScope", err)
			}
			if err := g.Admit(ctx, "job", 10); err != nil {
				t.Fatalf("Admit(10) = %v", err)
			}
			if err := g.Admit(ctx, "job", 10); err != nil {
				t.Fatalf("Admit(10) again = %v, want it admitted (equal tokens pass)", err)
			}
			err := g.Admit(ctx, "job", 9)
			var stale *StaleError
			if !errors.Is(err, ErrStale) || !errors.As(err, &stale) {
				t.Fatalf("Admit(9) = %v, want a StaleError", err)
			}
			if *stale != (StaleError{Scope: "job", Token: 9, Highest: 10}) {
				t.Fatalf("StaleError = %+v", *stale)
			}
			if err := g.Admit(ctx, "other", 3); err != nil {
				t.Fatalf("Admit(other, 3) = %v, want scopes independent", err)
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if err := g.Admit(cancelled, "job", 20); !errors.Is(err, context.Canceled) {
				t.Fatalf("Admit(cancelled ctx) = %v", err)
			}
			if err := g.Admit(ctx, "job", 11); err != nil {
				t.Fatalf("Admit(11) = %v", err)
			}
			for scope, want := range map[string]uint64{"job": 11, "other": 3} {
				if h, err := g.Highest(ctx, scope); err != nil || h != want {
					t.Fatalf("Highest(%s) = %d, %v; want %d (refused tokens must not be recorded)", scope, h, err, want)
				}
			}
		})
	}
}

type decision struct {
	token    uint64
	admitted bool
}

type outcome struct {
	scope    string
	token    uint64
	admitted bool
	highest  uint64 // from the StaleError when refused
}

// TestGuardConcurrentAdmit offers random, mostly rising tokens from many goroutines and
// checks that every decision, in the order the guard serialised them, admitted a token
// exactly when it was at least the highest admitted before it.
func TestGuardConcurrentAdmit(t *testing.T) {
	const workers, calls = 64, 200
	scopes := []string{"a", "b", "c", "d"}
	for _, gc := range guardCases() {
		t.Run(gc.name, func(t *testing.T) {
			var logMu sync.Mutex
			log := map[string][]decision{}
			g := gc.open(t, func(scope string, token uint64, admitted bool) {
				logMu.Lock()
				log[scope] = append(log[scope], decision{token, admitted})
				logMu.Unlock()
			})
			results := make([][]outcome, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[w] = offerTokens(t, g, scopes, calls, uint64(w))
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			for _, scope := range scopes {
				checkReplay(t, scope, log[scope])
				checkOutcomesMatchLog(t, scope, log[scope], results)
				checkHighestIsMaxOffered(t, g, scope, results)
			}
		})
	}
}

// offerTokens admits tokens in one goroutine and checks what it can see alone: once it
// knows a token at least h was admitted for a scope, anything lower must be refused.
func offerTokens(t *testing.T, g Guard, scopes []string, calls int, seed uint64) []outcome {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 7))
	known := map[string]uint64{}
	out := make([]outcome, 0, calls)
	for i := range calls {
		scope := scopes[r.IntN(len(scopes))]
		token := uint64(i*20 + r.IntN(100) + 1)
		err := g.Admit(ctx, scope, token)
		o := outcome{scope: scope, token: token, admitted: err == nil}
		var stale *StaleError
		switch {
		case err == nil:
			known[scope] = max(known[scope], token)
		case errors.As(err, &stale):
			if stale.Token != token || stale.Scope != scope || stale.Highest <= token {
				t.Errorf("Admit(%s, %d) refused with %+v", scope, token, *stale)
			}
			if stale.Highest < known[scope] {
				t.Errorf("Admit(%s, %d): highest went back from %d to %d", scope, token, known[scope], stale.Highest)
			}
			o.highest = stale.Highest
			known[scope] = max(known[scope], stale.Highest)
		default:
			t.Errorf("Admit(%s, %d) = %v", scope, token, err)
			return out
		}
		if o.admitted && token < known[scope] {
			t.Errorf("Admit(%s, %d) admitted below %d, already known admitted", scope, token, known[scope])
		}
		out = append(out, o)
	}
	return out
}

func checkReplay(t *testing.T, scope string, log []decision) {
	t.Helper()
	var highest uint64
	for i, d := range log {
		if want := d.token >= highest; d.admitted != want {
			t.Fatalf("scope %s decision %d: token %d with highest %d admitted=%v, want %v",
				scope, i, d.token, highest, d.admitted, want)
		}
		if d.admitted {
			highest = d.token
		}
	}
}

func checkOutcomesMatchLog(t *testing.T, scope string, log []decision, results [][]outcome) {
	t.Helper()
	fromLog := slices.Clone(log)
	var fromCalls []decision
	for _, rs := range results {
		for _, o := range rs {
			if o.scope == scope {
				fromCalls = append(fromCalls, decision{o.token, o.admitted})
			}
		}
	}
	order := func(a, b decision) int {
		if c := cmp.Compare(a.token, b.token); c != 0 {
			return c
		}
		return cmp.Compare(boolInt(a.admitted), boolInt(b.admitted))
	}
	slices.SortFunc(fromLog, order)
	slices.SortFunc(fromCalls, order)
	if !slices.Equal(fromLog, fromCalls) {
		t.Fatalf("scope %s: the %d decisions seen by the guard differ from the %d results returned",
			scope, len(fromLog), len(fromCalls))
	}
}

func checkHighestIsMaxOffered(t *testing.T, g Guard, scope string, results [][]outcome) {
	t.Helper()
	var maxOffered uint64
	admitted := 0
	for _, rs := range results {
		for _, o := range rs {
			if o.scope == scope {
				maxOffered = max(maxOffered, o.token)
				if o.admitted {
					admitted++
				}
			}
		}
	}
	h, err := g.Highest(context.Background(), scope)
	if err != nil || h != maxOffered {
		t.Fatalf("Highest(%s) = %d, %v; want the max offered, %d", scope, h, err, maxOffered)
	}
	if admitted < 2 {
		t.Fatalf("scope %s: only %d admissions; the test offers too few rising tokens", scope, admitted)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
