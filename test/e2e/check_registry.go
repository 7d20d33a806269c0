package e2e

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// regState is one job name's state in the registry model: whether the job
// exists, its version and the label the churn writes.
type regState struct {
	Exists  bool
	Version uint64
	Value   string
}

// step is what op does to s when it takes effect: the next state and the
// reply a correct registry gives.
func step(s regState, op RegistryOp) (next regState, res Result, version uint64, got string) {
	switch op.Kind {
	case OpCreate:
		if s.Exists {
			return s, ResExists, 0, ""
		}
		return regState{Exists: true, Version: 1, Value: op.Value}, ResOK, 1, ""
	case OpUpdate:
		switch {
		case !s.Exists:
			return s, ResNotFound, 0, ""
		case op.Expected != 0 && op.Expected != s.Version:
			return s, ResMismatch, 0, ""
		case op.Value == s.Value: // an identical spec changes nothing
			return s, ResOK, s.Version, ""
		}
		return regState{Exists: true, Version: s.Version + 1, Value: op.Value}, ResOK, s.Version + 1, ""
	case OpDelete:
		switch {
		case !s.Exists:
			return s, ResNotFound, 0, ""
		case op.Expected != 0 && op.Expected != s.Version:
			return s, ResMismatch, 0, ""
		}
		return regState{}, ResOK, 0, ""
	case OpGet:
		if !s.Exists {
			return s, ResNotFound, 0, ""
		}
		return s, ResOK, s.Version, s.Value
	}
	return s, "", 0, ""
}

// registryModel is the registry as a set of independent names. An
// operation whose outcome is unknown may or may not have taken effect.
var registryModel = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(RegistryOp).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init: func() []interface{} { return []interface{}{regState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, op, out := state.(regState), input.(RegistryOp), output.(RegistryOp)
		next, res, version, got := step(s, op)
		if out.Result == ResUnknown {
			if next == s {
				return []interface{}{s}
			}
			return []interface{}{s, next}
		}
		if res != out.Result {
			return nil
		}
		if res == ResOK && (op.Kind == OpGet || op.Kind == OpCreate || op.Kind == OpUpdate) &&
			(version != out.Version || got != out.Got) {
			return nil
		}
		return []interface{}{next}
	},
	Hash: func(state interface{}) uint64 {
		s := state.(regState)
		h := fnv.New64a()
		fmt.Fprintf(h, "%t/%d/%s", s.Exists, s.Version, s.Value)
		return h.Sum64()
	},
	DescribeOperation: func(input, output interface{}) string {
		op, out := input.(RegistryOp), output.(RegistryOp)
		s := fmt.Sprintf("%s(%s", op.Kind, op.Key)
		if op.Value != "" {
			s += " v=" + op.Value
		}
		if op.Expected != 0 {
			s += fmt.Sprintf(" @%d", op.Expected)
		}
		s += fmt.Sprintf(") on %s -> %s", op.Node, out.Result)
		if out.Result == ResOK && op.Kind != OpDelete {
			s += fmt.Sprintf(" version %d", out.Version)
			if op.Kind == OpGet {
				s += " v=" + out.Got
			}
		}
		return s
	},
	DescribeState: func(state interface{}) string {
		s := state.(regState)
		if !s.Exists {
			return "absent"
		}
		return fmt.Sprintf("version %d v=%s", s.Version, s.Value)
	},
}).ToModel()

type registryResult struct {
	verdict porcupine.CheckResult
	info    porcupine.LinearizationInfo
}

// registryOperations turns the churn history into porcupine operations. A
// read that failed tells nothing and is left out; a write whose outcome is
// unknown may take effect at any time after its call.
func registryOperations(ops []RegistryOp) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		if op.Result == ResUnknown && op.Kind == OpGet {
			continue
		}
		ret := op.Return
		if op.Result == ResUnknown {
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op, Call: op.Call, Output: op, Return: ret})
	}
	return out
}

// checkRegistry: the registry history is linearizable (G6).
func (c *checker) checkRegistry(opts CheckOptions) {
	ops := c.h.Registry
	if len(ops) == 0 {
		return
	}
	s := &c.rep.Stats
	s.RegistryOps = len(ops)
	for _, op := range ops {
		if op.Result == ResUnknown {
			s.RegistryUnsure++
		}
	}
	timeout := opts.RegistryTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	history := registryOperations(ops)
	verdict, info := porcupine.CheckOperationsVerbose(registryModel, history, timeout)
	c.rep.registry = &registryResult{verdict: verdict, info: info}
	s.Linearizable = string(verdict)
	switch verdict {
	case porcupine.Illegal:
		c.fail(RuleG6, "the registry history of %d operations is not linearizable%s", len(ops), illegalKeys(history, timeout))
	case porcupine.Unknown:
		c.inconclusive("the linearizability check of %d registry operations did not finish within %s", len(ops), timeout)
	}
}

// illegalKeys names the job names whose own history porcupine cannot
// linearize, to point a person at them.
func illegalKeys(ops []porcupine.Operation, timeout time.Duration) string {
	var bad []string
	for _, part := range registryModel.Partition(ops) {
		if porcupine.CheckOperationsTimeout(registryModel, part, timeout) == porcupine.Illegal {
			bad = append(bad, part[0].Input.(RegistryOp).Key)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf(" (keys %v)", bad)
}
