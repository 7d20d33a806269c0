package fence

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// SignatureV2Prefix starts a v2 signature: "v2=" and the unpadded base64url encoding of
// HMAC-SHA256(key, CanonicalV2(d)). Unlike v1 it covers what was sent, not only the run:
// a job that makes the nodes send a request cannot reuse its signature for another
// method, URL or body (docs/fencing.md, "Signature v2").
const SignatureV2Prefix = "v2="

// signedContextV2 is the first line of every v2 message.
const signedContextV2 = "raftcron-signature-v2"

// Dispatch is what a v2 signature covers: the run, and for an HTTP dispatch the request
// that carried it. An exec run or a worker attempt has no Method and no URL.
type Dispatch struct {
	Run Run
	// Method is the HTTP method as sent ("POST"); empty for an exec run or worker attempt.
	Method string
	// URL is the request's URL as sent: scheme "://" the Host header, then the
	// request-target (path and query), e.g. "https://billing.example/charge?id=7".
	// Empty for an exec run or worker attempt.
	URL string
	// BodySHA256 is the SHA-256 of the request body, or of an exec run's or worker
	// attempt's payload; no body is the digest of zero bytes.
	BodySHA256 [sha256.Size]byte
}

// HTTPDispatch is the Dispatch of an HTTP request carrying run. url is the URL as sent
// (SentURL on the sender, ReceivedURL on the receiver).
func HTTPDispatch(run Run, method, url string, body []byte) Dispatch {
	return Dispatch{Run: run, Method: method, URL: url, BodySHA256: sha256.Sum256(body)}
}

// ExecDispatch is the Dispatch of an exec run or worker attempt: the run and its payload
// (nil when it has none).
func ExecDispatch(run Run, payload []byte) Dispatch {
	return Dispatch{Run: run, BodySHA256: sha256.Sum256(payload)}
}

// SentURL is the URL an outgoing request is sent to, in the form a v2 signature covers:
// the scheme, the Host header (req.Host, else the URL's host) and the request-target.
func SentURL(req *http.Request) string {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	return req.URL.Scheme + "://" + host + req.URL.RequestURI()
}

// ReceivedURL is the URL a server received a request at, for a server that terminates
// its own connections: https when it came over TLS, the Host header and the
// request-target as received. Behind a proxy that terminates TLS or rewrites the path,
// tell the Middleware how to compute it (WithRequestURL).
func ReceivedURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	target := r.RequestURI // as sent: the server leaves it unparsed
	if !strings.HasPrefix(target, "/") {
		target = r.URL.RequestURI() // absolute-form (or none, in a handler test)
	}
	return scheme + "://" + r.Host + target
}

// CanonicalV2 is the message a v2 signature covers: lines joined by "\n", no final
// newline, each "name:value" after the version line. For an HTTP dispatch:
//
//	raftcron-signature-v2
//	method:POST
//	url:https://billing.example/charge?id=7
//	body-sha256:<64 lowercase hex digits>
//	job:nightly-billing
//	run-id:r-0001
//	token:42
//	scheduled-at:2026-11-22T01:02:03Z
//	attempt:2
//	idempotency-key:nightly-billing/2026-11-22T01:02:03Z
//
// An exec run or worker attempt leaves out the method and url lines, so neither form can
// pass for the other. No value may hold a newline: FromHeader refuses control characters
// in the run, and SignV2 and VerifyV2 refuse them in the method and URL.
func CanonicalV2(d Dispatch) []byte {
	r := d.Run
	b := make([]byte, 0, 256+len(d.URL))
	b = append(b, signedContextV2...)
	if d.Method != "" || d.URL != "" {
		b = append(b, "\nmethod:"...)
		b = append(b, d.Method...)
		b = append(b, "\nurl:"...)
		b = append(b, d.URL...)
	}
	b = append(b, "\nbody-sha256:"...)
	b = hex.AppendEncode(b, d.BodySHA256[:])
	b = append(b, "\njob:"...)
	b = append(b, r.Job...)
	b = append(b, "\nrun-id:"...)
	b = append(b, r.RunID...)
	b = append(b, "\ntoken:"...)
	b = strconv.AppendUint(b, r.Token, 10)
	b = append(b, "\nscheduled-at:"...)
	b = append(b, FormatScheduledAt(r.ScheduledAt)...)
	b = append(b, "\nattempt:"...)
	b = strconv.AppendUint(b, uint64(r.Attempt), 10)
	b = append(b, "\nidempotency-key:"...)
	return append(b, r.IdempotencyKey...)
}

// SignV2 returns the v2 signature of d with the first key, in its wire form "v2=...":
// the value of X-Raftcron-Signature (or RAFTCRON_SIGNATURE for an exec run). It fails
// only when the method or URL holds a control character, which no request can carry.
func (k *Keys) SignV2(d Dispatch) (string, error) {
	if err := checkDispatch(d); err != nil {
		return "", err
	}
	return SignatureV2Prefix + base64.RawURLEncoding.EncodeToString(macV2(k.keys[0], d)), nil
}

// VerifyV2 checks a v2 signature (its wire form) against d with every key. It fails with
// ErrUnsigned when signature is empty and ErrBadSignature otherwise.
func (k *Keys) VerifyV2(d Dispatch, signature string) error {
	if signature == "" {
		return ErrUnsigned
	}
	enc, ok := strings.CutPrefix(signature, SignatureV2Prefix)
	if !ok {
		return fmt.Errorf("%w: want the form %s<base64url>", ErrBadSignature, SignatureV2Prefix)
	}
	got, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: not %d bytes of unpadded base64url", ErrBadSignature, sha256.Size)
	}
	if err := checkDispatch(d); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	for _, key := range k.keys {
		if hmac.Equal(got, macV2(key, d)) {
			return nil
		}
	}
	return fmt.Errorf("%w: made with none of the keys, or the request was altered", ErrBadSignature)
}

// checkDispatch keeps the message unambiguous: a method or URL with a control character
// could forge a line. The run's own fields are checked by FromHeader and FromEnv.
func checkDispatch(d Dispatch) error {
	for _, f := range [...]struct{ name, value string }{{"method", d.Method}, {"url", d.URL}} {
		if strings.ContainsFunc(f.value, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			return fmt.Errorf("fence: %s contains a control character", f.name)
		}
	}
	if (d.Method == "") != (d.URL == "") {
		return fmt.Errorf("fence: an HTTP dispatch needs both its method and its URL")
	}
	return nil
}

func macV2(key []byte, d Dispatch) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(CanonicalV2(d))
	return h.Sum(nil)
}
