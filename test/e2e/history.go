// Package e2e is raftcron's end-to-end suite: it runs the real binary as a
// cluster of processes, injects faults, records what a downstream service
// and registry clients observed, and checks the guarantees of DESIGN.md §1
// on that record. The scenarios need the build tag e2e; the history format
// and the checker here are plain code with unit tests of their own.
package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// History is everything one scenario observed. The checker reads nothing
// else (besides the run ledgers), so a saved history can be checked again.
type History struct {
	Scenario string    `json:"scenario"`
	Seed     int64     `json:"seed"`
	Network  string    `json:"network"` // netns | proxy | none
	Nodes    []string  `json:"nodes"`
	Start    time.Time `json:"start"` // registry call/return times count from here
	Jobs     []JobInfo `json:"jobs"`
	// Attempts are the requests the sink received, in the order it
	// decided them.
	Attempts []Attempt     `json:"attempts"`
	Registry []RegistryOp  `json:"registry"`
	Events   []Event       `json:"events"`
	Status   []StatusPoint `json:"status"`
	Expect   Expect        `json:"expect"`
	// ClockSkew: some node's scheduler clock was offset on purpose, so
	// its times cannot be compared with the sink's.
	ClockSkew bool `json:"clock_skew,omitempty"`
	// Chains are the workload's dependencies (TestChains3), each child
	// created before its parent's first run.
	Chains []ChainLink `json:"chains,omitempty"`
}

// ChainLink is one dependency of the workload: Child runs after Parent,
// on its success, and exists before Parent's first run.
type ChainLink struct {
	Parent string `json:"parent"`
	Child  string `json:"child"`
}

// JobInfo is a stable job of the workload: an "@every Ns" schedule (slots
// are the multiples of N seconds) that never changes.
type JobInfo struct {
	Name       string `json:"name"`
	Period     int64  `json:"period_s"`
	Generation uint64 `json:"generation"`
	AtMostOnce bool   `json:"at_most_once,omitempty"`
	// Worker: run by remote workers (a command that posts to the sink)
	// rather than by the leader's webhook.
	Worker bool `json:"worker,omitempty"`
	// Slots after Created and up to CheckTo must each have exactly one
	// committed, dispatched run (G4).
	Created int64 `json:"created_unix"`
	CheckTo int64 `json:"check_to_unix"`
}

// Outcome is what the sink did with one request.
type Outcome string

const (
	Applied   Outcome = "applied"   // the effect happened
	Duplicate Outcome = "duplicate" // the run's effect had happened before: acknowledged only
	Stale     Outcome = "stale"     // a newer token was admitted for the job: refused with 409
	Bad       Outcome = "bad"       // headers missing or inconsistent: refused with 400
)

// Attempt is one request the sink received.
type Attempt struct {
	Seq      int       `json:"seq"`
	Received time.Time `json:"received"`
	Job      string    `json:"job"`
	RunID    string    `json:"run_id"`
	Slot     int64     `json:"slot_unix"` // X-Raftcron-Scheduled-At
	Token    uint64    `json:"token"`
	Number   uint32    `json:"attempt"`
	Key      string    `json:"key"`
	// Sender is the node the request came from, when the network tells
	// (one address per node); empty otherwise.
	Sender string `json:"sender,omitempty"`
	// Parents is the request's X-Raftcron-Parent-Runs: a chained run's
	// parent runs, RUN_ID@TOKEN,...
	Parents string  `json:"parents,omitempty"`
	Outcome Outcome `json:"outcome"`
	Detail  string  `json:"detail,omitempty"`
}

// OpKind is a registry operation of the churn workload.
type OpKind string

const (
	OpCreate OpKind = "create"
	OpUpdate OpKind = "update"
	OpDelete OpKind = "delete"
	OpGet    OpKind = "get"
)

// Result is how a registry operation ended.
type Result string

const (
	ResOK       Result = "ok"
	ResNotFound Result = "not_found"
	ResExists   Result = "exists"
	ResMismatch Result = "mismatch" // expected_version did not match
	// ResUnknown: the call failed in a way that leaves its effect unknown
	// (timeout, lost leadership, node gone mid-call).
	ResUnknown Result = "unknown"
)

// RegistryOp is one call of the churn workload. Call and Return count
// nanoseconds from History.Start on one monotonic clock.
type RegistryOp struct {
	Client int    `json:"client"`
	Node   string `json:"node"`
	Key    string `json:"key"`
	Kind   OpKind `json:"kind"`
	// Value is the label a create or update writes; Expected the
	// expected_version an update or delete sends (0: any).
	Value    string `json:"value,omitempty"`
	Expected uint64 `json:"expected,omitempty"`
	Call     int64  `json:"call"`
	Return   int64  `json:"return"`
	Result   Result `json:"result"`
	// Version and Got are what a successful call returned: the job's
	// version and (get) its label.
	Version uint64 `json:"version,omitempty"`
	Got     string `json:"got,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Event is something the harness did to the cluster.
type Event struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"` // see the Ev* constants
	Nodes  []string  `json:"nodes,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// Event kinds the checker reads; others are for people.
const (
	EvKillAll    = "kill-all"    // every node SIGKILLed
	EvRestartAll = "restart-all" // every node running again after a kill-all
)

// StatusPoint is one poll of a node's /status.
type StatusPoint struct {
	At      time.Time `json:"at"`
	Node    string    `json:"node"`
	State   string    `json:"state,omitempty"`
	Leader  string    `json:"leader,omitempty"`
	Term    uint64    `json:"term,omitempty"`
	Commit  uint64    `json:"commit,omitempty"`
	Applied uint64    `json:"applied,omitempty"`
	Token   uint64    `json:"token,omitempty"`
	Err     string    `json:"err,omitempty"`
}

// Expect says what a scenario must have provoked to prove anything.
type Expect struct {
	LeaderChanges int `json:"leader_changes"`
	StaleAttempts int `json:"stale_attempts"`
	// Redispatches: attempts re-dispatched (after a leader change or a
	// lost worker) the scenario must have caused.
	Redispatches int  `json:"redispatches,omitempty"`
	Registry     bool `json:"registry"` // the churn ran: its history must not be empty
	// ChainedRuns: chained runs the chains must have fired.
	ChainedRuns int `json:"chained_runs,omitempty"`
}

// Save writes v as indented JSON to path.
func Save(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Load reads JSON written by Save into v.
func Load(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
