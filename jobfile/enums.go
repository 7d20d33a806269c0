package jobfile

import (
	"fmt"
	"slices"
	"strings"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// enumNames maps a proto enum to its file spelling. The zero (UNSPECIFIED)
// value has no name: it is written as an absent field.
type enumNames[E ~int32] struct {
	order []E // ascending, the order of the proto declaration; errors list names in it
	names map[E]string
}

func newEnumNames[E ~int32](names map[E]string) enumNames[E] {
	t := enumNames[E]{names: names}
	for v := range names {
		t.order = append(t.order, v)
	}
	slices.Sort(t.order)
	return t
}

var (
	catchupPolicies = newEnumNames(map[pb.CatchupPolicy]string{
		pb.CatchupPolicy_CATCHUP_POLICY_ALL:    "all",
		pb.CatchupPolicy_CATCHUP_POLICY_LATEST: "latest",
		pb.CatchupPolicy_CATCHUP_POLICY_NONE:   "none",
	})
	overlaps = newEnumNames(map[pb.Overlap]string{
		pb.Overlap_OVERLAP_SKIP:         "skip",
		pb.Overlap_OVERLAP_ALLOW:        "allow",
		pb.Overlap_OVERLAP_BUFFER_ONE:   "buffer_one",
		pb.Overlap_OVERLAP_CANCEL_OTHER: "cancel_other",
	})
	deliveries = newEnumNames(map[pb.Delivery]string{
		pb.Delivery_DELIVERY_AT_LEAST_ONCE: "at_least_once",
		pb.Delivery_DELIVERY_AT_MOST_ONCE:  "at_most_once",
	})
)

// parse turns a file spelling into the enum; "" is the unspecified value.
func (t enumNames[E]) parse(field, s string) (E, error) {
	if s == "" {
		return 0, nil
	}
	for _, v := range t.order {
		if t.names[v] == s {
			return v, nil
		}
	}
	return 0, &FieldError{Field: field, Rule: fmt.Sprintf("unknown value %q (want %s)", s, t.want())}
}

// format is the inverse of parse; a value outside the table is an error so
// that encoding never writes a file that would not decode.
func (t enumNames[E]) format(field string, v E) (string, error) {
	if v == 0 {
		return "", nil
	}
	name, ok := t.names[v]
	if !ok {
		return "", &FieldError{Field: field, Rule: fmt.Sprintf("unknown value %d (want %s)", v, t.want())}
	}
	return name, nil
}

// want lists the names as "a, b or c".
func (t enumNames[E]) want() string {
	names := make([]string, len(t.order))
	for i, v := range t.order {
		names[i] = t.names[v]
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
