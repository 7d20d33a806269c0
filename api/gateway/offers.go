package gateway

import (
	"bytes"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// marshalOffers writes a poll's answer as proto JSON writes it (proto field
// names, unset fields left out, map keys sorted), without reflection. A poll
// answers up to 1,000 offers, and proto JSON's reflection over them was a
// fifth of the leader's CPU in a wave taken by HTTP workers. It reports
// false for an answer holding what proto JSON refuses or spells its own way
// (a string that is no UTF-8, a time or duration out of range, an unknown
// field): the caller writes that one with proto JSON.
func marshalOffers(r *pb.PollAttemptsResponse) ([]byte, bool) {
	w := offerWriter{b: make([]byte, 0, 64+len(r.GetOffers())*768), ok: true}
	if !w.accepts(r, nil) {
		return nil, false
	}
	w.b = append(w.b, '{')
	if len(r.GetOffers()) > 0 {
		w.b = append(w.b, `"offers":[`...)
		for i, o := range r.GetOffers() {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			if w.offer(o); !w.ok {
				return nil, false
			}
		}
		w.b = append(w.b, ']')
	}
	return append(w.b, '}'), true
}

// offerWriter appends an object's fields, a comma before all but the first.
type offerWriter struct {
	b     []byte
	ok    bool
	count int
	keys  []string // the env's, sorted; reused from offer to offer
}

// accepts reports whether m is written here: a message proto JSON refuses
// (invalid) or that holds a field unknown to this build goes to proto JSON.
func (w *offerWriter) accepts(m proto.Message, invalid error) bool {
	if invalid != nil || len(m.ProtoReflect().GetUnknown()) > 0 {
		w.ok = false
	}
	return w.ok
}

func (w *offerWriter) name(n string) {
	if w.count > 0 {
		w.b = append(w.b, ',')
	}
	w.count++
	w.b = append(w.b, '"')
	w.b = append(w.b, n...)
	w.b = append(w.b, `":`...)
}

func (w *offerWriter) str(n, v string) {
	if v == "" {
		return
	}
	w.name(n)
	w.quote(v)
}

func (w *offerWriter) quote(v string) {
	if !utf8.ValidString(v) {
		w.ok = false
		return
	}
	w.b = appendJSONString(w.b, v)
}

func (w *offerWriter) time(n string, t *timestamppb.Timestamp) {
	if t == nil || !w.accepts(t, t.CheckValid()) {
		return
	}
	w.name(n)
	w.b = append(w.b, '"')
	w.b = trimFraction(time.Unix(t.GetSeconds(), int64(t.GetNanos())).UTC().AppendFormat(w.b, "2006-01-02T15:04:05.000000000"))
	w.b = append(w.b, `Z"`...)
}

func (w *offerWriter) duration(n string, d *durationpb.Duration) {
	if d == nil || !w.accepts(d, d.CheckValid()) {
		return
	}
	w.name(n)
	w.b = append(w.b, '"')
	secs, nanos := d.GetSeconds(), d.GetNanos()
	if secs < 0 || nanos < 0 {
		w.b = append(w.b, '-')
		secs, nanos = -secs, -nanos
	}
	w.b = strconv.AppendInt(w.b, secs, 10)
	w.b = append(w.b, '.')
	w.b = strconv.AppendInt(w.b, int64(nanos)+1e9, 10) // 1 and nine digits
	w.b = append(w.b[:len(w.b)-10], w.b[len(w.b)-9:]...)
	w.b = append(trimFraction(w.b), `s"`...)
}

// offer writes o's fields in the proto's declaration order.
func (w *offerWriter) offer(o *pb.AttemptOffer) {
	if !w.accepts(o, nil) {
		return
	}
	w.b = append(w.b, '{')
	w.count = 0
	w.str("run_id", o.GetRunId())
	w.str("job", o.GetJob())
	w.time("slot", o.GetSlot())
	if a := o.GetAttempt(); a != 0 {
		w.name("attempt")
		w.b = strconv.AppendUint(w.b, uint64(a), 10)
	}
	if t := o.GetToken(); t != 0 {
		w.name("token")
		w.b = append(w.b, '"')
		w.b = strconv.AppendUint(w.b, t, 10)
		w.b = append(w.b, '"')
	}
	w.str("payload", o.GetPayload())
	if env := o.GetEnv(); len(env) > 0 {
		w.name("env")
		w.b = append(w.b, '{')
		w.keys = w.keys[:0]
		for k := range env {
			w.keys = append(w.keys, k)
		}
		slices.Sort(w.keys)
		for i, k := range w.keys {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.quote(k)
			w.b = append(w.b, ':')
			w.quote(env[k])
		}
		w.b = append(w.b, '}')
	}
	w.time("deadline", o.GetDeadline())
	w.time("lease_expires", o.GetLeaseExpires())
	w.str("signature", o.GetSignature())
	w.str("handler", o.GetHandler())
	w.str("idempotency_key", o.GetIdempotencyKey())
	w.duration("limit", o.GetLimit())
	w.duration("lease", o.GetLease())
	w.b = append(w.b, '}')
}

// trimFraction ends a time or a duration as proto JSON does, with 0, 3, 6
// or 9 digits of its nine-digit fraction.
func trimFraction(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("000"))
	b = bytes.TrimSuffix(b, []byte("000"))
	return bytes.TrimSuffix(b, []byte(".000"))
}

// appendJSONString quotes valid UTF-8 as proto JSON does: `"` and `\`
// escaped, control characters as \b \f \n \r \t or \u00XX, all else as is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= ' ' && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
