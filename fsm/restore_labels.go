package fsm

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers on the path from a job record to its spec's labels.
const (
	recordJobField protowire.Number = 1 // SnapshotRecord.job
	jobSpecField   protowire.Number = 1 // Job.spec
)

// labelLifter takes the labels out of job records before they are
// decoded, so that decoding skips building a map that storeSpec would only
// turn back into bytes: a fifth of the work of a restore. Its buffers are
// reused from record to record (decoding copies what it keeps).
type labelLifter struct {
	rest, job, rec, labels []byte
}

// lift returns the record without its spec's labels and the labels in
// stored form (storeSpec's bytes). ok is false when the record holds no
// labels or not in the canonical form every snapshot writes (one job, one
// spec, valid pairs in strictly increasing key order); the caller then
// decodes the record as it is.
func (l *labelLifter) lift(rec []byte) (out, labels []byte, ok bool) {
	job, jobAt, ok := onlyField(rec, recordJobField)
	if !ok {
		return nil, nil, false
	}
	spec, specAt, ok := onlyField(job, jobSpecField)
	if !ok {
		return nil, nil, false
	}
	if l.rest, l.labels, ok = splitLabels(spec, l.rest[:0], l.labels[:0]); !ok {
		return nil, nil, false
	}
	// Rebuild outwards: the spec without labels inside the job inside the
	// record, each behind its new length.
	l.job = append(l.job[:0], job[:specAt.start]...)
	l.job = protowire.AppendVarint(l.job, uint64(len(l.rest)))
	l.job = append(append(l.job, l.rest...), job[specAt.end:]...)
	l.rec = append(l.rec[:0], rec[:jobAt.start]...)
	l.rec = protowire.AppendVarint(l.rec, uint64(len(l.job)))
	l.rec = append(append(l.rec, l.job...), rec[jobAt.end:]...)
	return l.rec, l.labels, true
}

// span locates a field's payload in a message: [start, end) of its bytes,
// start being where its length prefix begins.
type span struct{ start, end int }

// onlyField returns the payload of field num, which must be a bytes field
// that occurs exactly once in msg, and where its length prefix and payload
// lie.
func onlyField(msg []byte, num protowire.Number) ([]byte, span, bool) {
	var payload []byte
	var at span
	found := false
	for off := 0; off < len(msg); {
		n, typ, tn := protowire.ConsumeTag(msg[off:])
		if tn < 0 {
			return nil, span{}, false
		}
		vn := protowire.ConsumeFieldValue(n, typ, msg[off+tn:])
		if vn < 0 {
			return nil, span{}, false
		}
		if n == num {
			if found || typ != protowire.BytesType {
				return nil, span{}, false
			}
			b, _ := protowire.ConsumeBytes(msg[off+tn:])
			payload, at, found = b, span{off + tn, off + tn + vn}, true
		}
		off += tn + vn
	}
	return payload, at, found
}

// splitLabels appends spec without its label fields to rest, and the
// labels in stored form to labels; false if there are none or they are not
// canonical.
func splitLabels(spec, rest, labels []byte) ([]byte, []byte, bool) {
	var prev []byte
	count := 0
	for off := 0; off < len(spec); {
		n, typ, tn := protowire.ConsumeTag(spec[off:])
		if tn < 0 {
			return nil, nil, false
		}
		vn := protowire.ConsumeFieldValue(n, typ, spec[off+tn:])
		if vn < 0 {
			return nil, nil, false
		}
		field := spec[off : off+tn+vn]
		off += tn + vn
		if n != labelsField {
			rest = append(rest, field...)
			continue
		}
		if typ != protowire.BytesType {
			return nil, nil, false
		}
		pair, _ := protowire.ConsumeBytes(field[tn:])
		k, v, ok := labelPair(pair)
		// The pair must hold exactly a key and a value, as valid UTF-8, as
		// decoding it into the map would require.
		if !ok || labelPairSize(string(k), string(v)) != len(pair) || !utf8.Valid(k) || !utf8.Valid(v) ||
			(count > 0 && string(k) <= string(prev)) {
			return nil, nil, false
		}
		labels = protowire.AppendTag(labels, labelsField, protowire.BytesType)
		labels = protowire.AppendVarint(labels, uint64(len(pair)))
		labels = protowire.AppendTag(labels, mapKeyField, protowire.BytesType)
		labels = protowire.AppendBytes(labels, k)
		labels = protowire.AppendTag(labels, mapValueField, protowire.BytesType)
		labels = protowire.AppendBytes(labels, v)
		prev, count = k, count+1
	}
	return rest, labels, count > 0
}
