package fsm

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The stored form of a job is the decoded pb.Job with one change: its
// spec's labels are kept in protobuf wire form, as unknown fields of the
// spec, instead of in a Go map. A map costs ~380 bytes for a single label,
// about a quarter of a job's memory, for a field the FSM reads only to
// filter lists and the scheduler never reads; the wire form of the same
// label is a 16-byte slice. Because unknown fields are marshaled as they
// are, snapshots and the state hash write the labels without a conversion,
// and a decoder (Restore, an older build) reads them back as the labels
// field. Clones for callers decode them into the map again (thaw).
//
// The wire form is canonical — pairs in key order, key and value always
// written — so two equal label sets have equal bytes, and proto.Equal on
// two stored specs compares labels exactly.

var labelsField = (&pb.JobSpec{}).ProtoReflect().Descriptor().Fields().ByName("labels").Number()

// Field numbers of a map entry (one key/value pair on the wire).
const (
	mapKeyField   protowire.Number = 1
	mapValueField protowire.Number = 2
)

// storeSpec turns a decoded spec, owned by the caller and not yet stored,
// into its stored form in place.
func storeSpec(spec *pb.JobSpec) {
	if len(spec.GetLabels()) == 0 {
		spec.Labels = nil
		return
	}
	m := spec.ProtoReflect()
	unknown := m.GetUnknown()
	keys := make([]string, 0, len(spec.Labels))
	size := len(unknown)
	for k, v := range spec.Labels {
		keys = append(keys, k)
		size += protowire.SizeTag(labelsField) + protowire.SizeBytes(labelPairSize(k, v))
	}
	slices.Sort(keys)
	raw := make([]byte, 0, size)
	raw = append(raw, unknown...)
	for _, k := range keys {
		v := spec.Labels[k]
		raw = protowire.AppendTag(raw, labelsField, protowire.BytesType)
		raw = protowire.AppendVarint(raw, uint64(labelPairSize(k, v)))
		raw = protowire.AppendTag(raw, mapKeyField, protowire.BytesType)
		raw = protowire.AppendString(raw, k)
		raw = protowire.AppendTag(raw, mapValueField, protowire.BytesType)
		raw = protowire.AppendString(raw, v)
	}
	spec.Labels = nil
	m.SetUnknown(raw)
}

func labelPairSize(k, v string) int {
	return protowire.SizeTag(mapKeyField) + protowire.SizeBytes(len(k)) +
		protowire.SizeTag(mapValueField) + protowire.SizeBytes(len(v))
}

// thawSpec turns a copy of a stored spec back into a plain message: the
// labels return to the map; unknown fields that are no labels stay unknown.
func thawSpec(spec *pb.JobSpec) {
	m := spec.ProtoReflect()
	raw := m.GetUnknown()
	if len(raw) == 0 {
		return
	}
	if n, onlyLabels := countLabels(raw); onlyLabels {
		// The common case, decoded directly: several times cheaper than
		// the generic unmarshal below.
		spec.Labels = make(map[string]string, n)
		eachLabel(spec, func(k, v []byte) bool {
			spec.Labels[string(k)] = string(v)
			return true
		})
		m.SetUnknown(nil)
		return
	}
	m.SetUnknown(nil)
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(raw, spec); err != nil {
		// The bytes were written by storeSpec or kept from a decoded
		// message, so they decode; keep them as they were otherwise.
		m.SetUnknown(raw)
	}
}

// countLabels counts the label pairs of raw unknown fields and reports
// whether they are all there is, well formed.
func countLabels(raw []byte) (n int, onlyLabels bool) {
	for len(raw) > 0 {
		num, typ, tn := protowire.ConsumeTag(raw)
		if tn < 0 || num != labelsField || typ != protowire.BytesType {
			return 0, false
		}
		pair, bn := protowire.ConsumeBytes(raw[tn:])
		if bn < 0 {
			return 0, false
		}
		if _, _, ok := labelPair(pair); !ok {
			return 0, false
		}
		raw = raw[tn+bn:]
		n++
	}
	return n, true
}

// storeJob turns a decoded job, owned by the caller, into its stored form:
// spec as above, and one timestamp shared by created_at and updated_at when
// they are equal, as they are until the first update.
func storeJob(j *pb.Job) {
	storeSpec(j.GetSpec())
	if c, u := j.GetCreatedAt(), j.GetUpdatedAt(); c != nil && u != nil && c != u &&
		c.GetSeconds() == u.GetSeconds() && c.GetNanos() == u.GetNanos() &&
		len(c.ProtoReflect().GetUnknown())+len(u.ProtoReflect().GetUnknown()) == 0 {
		j.UpdatedAt = c
	}
}

// hasLabels reports whether a stored spec carries every label of want.
func hasLabels(spec *pb.JobSpec, want map[string]string) bool {
	if len(want) == 0 {
		return true
	}
	found := 0
	eachLabel(spec, func(k, v []byte) bool {
		if w, ok := want[string(k)]; ok {
			if w != string(v) {
				return false
			}
			found++
		}
		return found < len(want)
	})
	return found == len(want)
}

// eachLabel calls fn with every label of a stored spec, in key order, until
// fn returns false.
func eachLabel(spec *pb.JobSpec, fn func(k, v []byte) bool) {
	raw := spec.ProtoReflect().GetUnknown()
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return
		}
		raw = raw[n:]
		if num != labelsField || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, raw); n < 0 {
				return
			}
			raw = raw[n:]
			continue
		}
		pair, n := protowire.ConsumeBytes(raw)
		if n < 0 {
			return
		}
		raw = raw[n:]
		k, v, ok := labelPair(pair)
		if ok && !fn(k, v) {
			return
		}
	}
}

// labelPair decodes one key/value pair; a missing key or value is empty.
func labelPair(b []byte) (k, v []byte, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, false
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != mapKeyField && num != mapValueField) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, nil, false
			}
			b = b[n:]
			continue
		}
		s, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, nil, false
		}
		b = b[n:]
		if num == mapKeyField {
			k = s
		} else {
			v = s
		}
	}
	return k, v, true
}
