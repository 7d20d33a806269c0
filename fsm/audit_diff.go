package fsm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/raftcron/raftcron/jobfile"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

// Bounds of an audit record's diff, so that one change to a huge spec
// cannot make the trail huge.
const (
	maxAuditChanges = 16
	maxAuditValue   = 128
)

// hiddenValue stands for a value that may hold a secret: a change to it is
// recorded, never the value. changedValue is the new side of a change from
// one hidden value to another.
const (
	hiddenValue  = "(hidden)"
	changedValue = "changed"
)

// hiddenFields may hold secrets (tokens in headers, passwords in
// environments or bodies); a field path under one of them is hidden. A
// URL's user information is hidden too (urlFields). A value that references
// a secret store entry (${secret:NAME}) is shown as written: the secret is
// in the store, and the rest of the value is its frame ("Bearer ...").
var hiddenFields = []string{"http.body", "http.headers.", "exec.env.", "worker.env.",
	// A channel's (audit_alert.go): a Slack webhook's URL is its secret.
	"webhook.headers.", "slack.url", "pagerduty.routing_key", "email.username", "email.password"}

// urlFields are the fields whose user information is hidden: a spec's
// target, a channel's webhook and PagerDuty URL.
var urlFields = []string{"http.url", "webhook.url", "pagerduty.url"}

// specChanges lists the fields that differ between two stored specs (nil
// for none, as before a create), in declaration order (the job file's)
// and map keys in order. Values are rendered as in the job file's JSON
// (renderValue): `overlap: "" → "skip"`, `catchup.window: "1m0s"`. It runs
// when a record is read, never in Apply: what it renders is the reading
// build's business (audit.go).
func specChanges(before, after *pb.JobSpec) []*pb.AuditChange {
	if before == nil {
		before = &pb.JobSpec{}
	}
	var d differ
	d.message("", before.ProtoReflect(), after.ProtoReflect())
	d.labels(labelPairs(before), labelPairs(after))
	return capChanges(d.out)
}

// capChanges keeps the first changes of a record, the last one saying how
// many more there were.
func capChanges(out []*pb.AuditChange) []*pb.AuditChange {
	if len(out) > maxAuditChanges {
		more := len(out) - (maxAuditChanges - 1)
		out = append(out[:maxAuditChanges-1], &pb.AuditChange{Field: "…", After: strconv.Itoa(more) + " more fields"})
	}
	return out
}

// label is one label of a spec.
type label struct{ k, v string }

// labelPairs are the spec's labels in key order, read from the wire form
// of a stored spec (stored.go) or from the map of a plain one.
func labelPairs(spec *pb.JobSpec) []label {
	if m := spec.GetLabels(); len(m) > 0 {
		return mapLabels(m)
	}
	var out []label
	eachLabel(spec, func(k, v []byte) bool {
		out = append(out, label{string(k), string(v)})
		return true
	})
	return out
}

// mapLabels are the labels of a map in key order.
func mapLabels(m map[string]string) []label {
	out := make([]label, 0, len(m))
	for k, v := range m {
		out = append(out, label{k, v})
	}
	slices.SortFunc(out, func(a, b label) int { return strings.Compare(a.k, b.k) })
	return out
}

// labels adds the labels that differ, merging two key-ordered lists; they
// come after the other fields' changes.
func (d *differ) labels(a, b []label) {
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || (len(a) > 0 && a[0].k < b[0].k):
			d.add("labels."+a[0].k, strconv.Quote(a[0].v), "")
			a = a[1:]
		case len(a) == 0 || b[0].k < a[0].k:
			d.add("labels."+b[0].k, "", strconv.Quote(b[0].v))
			b = b[1:]
		default:
			if a[0].v != b[0].v {
				d.add("labels."+a[0].k, strconv.Quote(a[0].v), strconv.Quote(b[0].v))
			}
			a, b = a[1:], b[1:]
		}
	}
}

type differ struct {
	out []*pb.AuditChange
}

func (d *differ) add(path, before, after string) {
	switch {
	case hidden(path):
		before, after = hideChange(before, after)
	case slices.Contains(urlFields, path):
		before, after = hideUserinfo(before, after)
	}
	d.out = append(d.out, &pb.AuditChange{Field: path, Before: cut(before), After: cut(after)})
}

func (d *differ) message(prefix string, a, b protoreflect.Message) {
	fields := a.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case prefix == "" && fd.Number() == labelsField:
			// Diffed from the wire form by labels.
		case fd.IsMap():
			d.mapField(prefix+string(fd.Name()), fd, a.Get(fd).Map(), b.Get(fd).Map())
		case fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !isWellKnown(fd.Message()):
			if a.Has(fd) || b.Has(fd) {
				d.message(prefix+string(fd.Name())+".", a.Get(fd).Message(), b.Get(fd).Message())
			}
		case sameScalar(fd, a.Get(fd), b.Get(fd)):
		default:
			if va, vb := render(a, fd), render(b, fd); va != vb {
				d.add(prefix+string(fd.Name()), va, vb)
			}
		}
	}
}

// sameScalar reports equal singular scalars without rendering them: most
// fields of an update did not change.
func sameScalar(fd protoreflect.FieldDescriptor, a, b protoreflect.Value) bool {
	if fd.IsList() {
		return false
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return a.String() == b.String()
	case protoreflect.BoolKind:
		return a.Bool() == b.Bool()
	case protoreflect.EnumKind:
		return a.Enum() == b.Enum()
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		return a.Int() == b.Int()
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return a.Uint() == b.Uint()
	}
	return false
}

func (d *differ) mapField(path string, fd protoreflect.FieldDescriptor, a, b protoreflect.Map) {
	keys := map[string]protoreflect.MapKey{}
	for _, m := range []protoreflect.Map{a, b} {
		m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys[k.String()] = k
			return true
		})
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		va, vb := "", ""
		if a.Has(keys[k]) {
			va = renderValue(fd.MapValue(), a.Get(keys[k]))
		}
		if b.Has(keys[k]) {
			vb = renderValue(fd.MapValue(), b.Get(keys[k]))
		}
		if va != vb {
			d.add(path+"."+k, va, vb)
		}
	}
}

func isWellKnown(md protoreflect.MessageDescriptor) bool {
	switch md.FullName() {
	case "google.protobuf.Duration", "google.protobuf.Timestamp":
		return true
	}
	return false
}

// render is a field's value as text; "" when a message field is unset.
func render(m protoreflect.Message, fd protoreflect.FieldDescriptor) string {
	if fd.IsList() {
		l := m.Get(fd).List()
		if l.Len() == 0 {
			return ""
		}
		parts := make([]string, l.Len())
		for i := range l.Len() {
			parts[i] = renderValue(fd, l.Get(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if fd.Kind() == protoreflect.MessageKind && !m.Has(fd) {
		return ""
	}
	return renderValue(fd, m.Get(fd))
}

// renderValue is one value as the job file's JSON writes it (jobfile owns
// that form): strings, enum names, durations and timestamps quoted, numbers
// and booleans bare; an unset enum is "". A value this build cannot write
// in the file — an enum number only a newer release names — reads as its
// number, so that an old record stays readable.
func renderValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if fd.Kind() == protoreflect.BytesKind {
		return strconv.Itoa(len(v.Bytes())) + " bytes"
	}
	fv, err := jobfile.Value(fd, v)
	if err != nil {
		if fd.Kind() == protoreflect.EnumKind {
			return strconv.Itoa(int(v.Enum()))
		}
		return v.String()
	}
	switch fv := fv.(type) {
	case string:
		if fd.Kind() == protoreflect.EnumKind && fv == "" {
			return ""
		}
		return strconv.Quote(fv)
	case bool:
		return strconv.FormatBool(fv)
	case map[string]any: // an element of a list of messages (after)
		if b, err := json.Marshal(fv); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(fv) // integers
}

func hidden(path string) bool {
	for _, h := range hiddenFields {
		if path == h || (strings.HasSuffix(h, ".") && strings.HasPrefix(path, h)) {
			return true
		}
	}
	return false
}

// hideChange renders a change of a hidden field: each side that holds a
// value but no reference reads "(hidden)", and a change from one such
// value to another reads "(hidden)" → "changed".
func hideChange(before, after string) (string, string) {
	b, a := hide(before), hide(after)
	if b == hiddenValue && a == hiddenValue {
		a = changedValue
	}
	return b, a
}

func hide(v string) string {
	if v == "" || secret.HasRef(v) {
		return v
	}
	return hiddenValue
}

// hideUserinfo renders a change of a URL with its user information
// hidden; a change of that alone reads "changed".
func hideUserinfo(before, after string) (string, string) {
	b, a := redactQuotedURL(before), redactQuotedURL(after)
	if b == a && before != after {
		a = changedValue
	}
	return b, a
}

// redactQuotedURL is a rendered (quoted) URL with its user information
// hidden.
func redactQuotedURL(v string) string {
	u, err := strconv.Unquote(v)
	if err != nil {
		return v
	}
	return strconv.Quote(secret.RedactURL(u, hiddenValue))
}

// cut bounds a rendered value at a rune boundary.
func cut(v string) string {
	if len(v) <= maxAuditValue {
		return v
	}
	n := maxAuditValue
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n] + "…"
}
