package fence

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// Two keys as a key file holds them; oldKey is being retired, newKey replaces it.
const (
	oldKey = "0ld-key-0ld-key-0ld-key-0ld-key-0ld-key="
	newKey = "n3w-key-n3w-key-n3w-key-n3w-key-n3w-key="
)

func mustKeys(t *testing.T, file string) *Keys {
	t.Helper()
	k, err := ParseKeys([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSignatureWireForm pins the signed message and the encoding: services written in
// other languages compute exactly this.
func TestSignatureWireForm(t *testing.T) {
	r := sampleRun()
	msg := "raftcron-signature-v1\nnightly-billing\nr-0001\n42\n2026-11-22T01:02:03Z\n2"
	h := hmac.New(sha256.New, []byte(newKey))
	h.Write([]byte(msg))
	want := "v1=" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	if got := mustKeys(t, newKey+"\n"+oldKey).Sign(r); got != want {
		t.Fatalf("Sign = %q, want %q: HMAC-SHA256 with the first key over %q", got, want, msg)
	}
}

func TestVerifyAcceptsBothKeysOfARotation(t *testing.T) {
	r := sampleRun()
	before := mustKeys(t, oldKey)              // nodes before the rotation
	after := mustKeys(t, newKey+"\n"+oldKey)   // nodes after it: the new key signs
	service := mustKeys(t, oldKey+"\n"+newKey) // a service during it: either order verifies
	for name, signer := range map[string]*Keys{"old key": before, "new key": after} {
		if err := service.Verify(r, signer.Sign(r)); err != nil {
			t.Errorf("signed with the %s: %v, want accepted during the rotation", name, err)
		}
	}
	if err := mustKeys(t, newKey).Verify(r, before.Sign(r)); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("old key after the rotation ended: %v, want ErrBadSignature", err)
	}
}

func TestVerifyRefusesAlteredRuns(t *testing.T) {
	keys := mustKeys(t, newKey)
	sig := keys.Sign(sampleRun())
	alter := map[string]func(*Run){
		"token":           func(r *Run) { r.Token = 1 << 62 },
		"job":             func(r *Run) { r.Job = "payroll"; r.IdempotencyKey = "payroll/2026-11-22T01:02:03Z" },
		"run id":          func(r *Run) { r.RunID = "r-0002" },
		"scheduled at":    func(r *Run) { r.ScheduledAt = r.ScheduledAt.Add(time.Hour) },
		"attempt":         func(r *Run) { r.Attempt = 3 },
		"idempotency key": func(r *Run) { r.IdempotencyKey = "nightly-billing/other" },
	}
	for name, edit := range alter {
		r := sampleRun()
		edit(&r)
		if err := keys.Verify(r, sig); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s altered: %v, want ErrBadSignature", name, err)
		}
	}
	r := sampleRun()
	for sig, want := range map[string]error{
		"":                                  ErrUnsigned,
		"v2=" + sig[3:]:                     ErrBadSignature,
		"v1=not base64!":                    ErrBadSignature,
		"v1=" + sig[3:10]:                   ErrBadSignature,
		mustKeys(t, oldKey).Sign(r):         ErrBadSignature,
		"v1=" + sig[3:] + "=":               ErrBadSignature,
		strings.Replace(sig, "v1", "V1", 1): ErrBadSignature,
	} {
		if err := keys.Verify(r, sig); !errors.Is(err, want) {
			t.Errorf("Verify(%q) = %v, want %v", sig, err, want)
		}
	}
}

func TestParseKeysFileFormat(t *testing.T) {
	k, err := ParseKeys([]byte("# rotated 2026-11\n\n  " + newKey + "  \n" + oldKey + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := sampleRun(); k.Sign(r) != mustKeys(t, newKey).Sign(r) {
		t.Fatal("the first key in the file must sign, trimmed")
	}
	for name, file := range map[string]string{
		"empty":        "# nothing\n\n",
		"short key":    "too-short\n",
		"three keys":   newKey + "\n" + oldKey + "\n" + strings.Repeat("x", 40) + "\n",
		"second short": newKey + "\nshort\n",
	} {
		if _, err := ParseKeys([]byte(file)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	path := filepath.Join(t.TempDir(), "fence.key")
	if err := os.WriteFile(path, []byte(newKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeys(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeys(path + ".missing"); err == nil {
		t.Fatal("a missing key file was accepted")
	}
}

// signedHeader is the header of sampleRun with token, signed with keys; later moves its
// slot (and with it the idempotency key) by that many seconds.
func signedHeader(keys *Keys, token uint64, later int) http.Header {
	r := sampleRun()
	r.Token = token
	r.ScheduledAt = r.ScheduledAt.Add(time.Duration(later) * time.Second)
	r.IdempotencyKey = r.Job + "/" + FormatScheduledAt(r.ScheduledAt)
	h := http.Header{}
	r.SetHeader(h)
	h.Set(HeaderSignature, keys.Sign(r))
	return h
}

func TestMiddlewareWithV1SignaturesRefusesUnsignedAndForged(t *testing.T) {
	ht := newHTTPTarget(t, WithKeys(mustKeys(t, oldKey+"\n"+newKey)), WithV1Signatures())
	forger := mustKeys(t, strings.Repeat("f", 40))
	twice := signedHeader(mustKeys(t, newKey), 42, 0)
	twice.Add(HeaderSignature, twice.Get(HeaderSignature))
	for name, h := range map[string]http.Header{
		"unsigned":              headerFor(1<<62, sampleRun().IdempotencyKey),
		"unsigned, no run":      {},
		"forged":                signedHeader(forger, 1<<62, 0),
		"signature given twice": twice,
	} {
		r := ht.post(t, h)
		if r.status != http.StatusUnauthorized || r.body["error"] == nil {
			t.Errorf("%s: %d %s, want 401 with an error", name, r.status, r.raw)
		}
	}
	if n := ht.calls.Load(); n != 0 {
		t.Fatalf("handler called %d times by refused requests", n)
	}
	if h, _ := ht.fence.Guard.Highest(context.Background(), "nightly-billing"); h != 0 {
		t.Fatalf("a refused request moved the high-water mark to %d", h)
	}
	// Both keys of the rotation are accepted, and the forged 2^62 did not shut them out.
	for i, k := range []*Keys{mustKeys(t, oldKey), mustKeys(t, newKey)} {
		if r := ht.post(t, signedHeader(k, uint64(50+i), i)); r.status != http.StatusOK || r.raw != "applied" {
			t.Fatalf("genuine run signed with key %d: %d %s, want it applied", i+1, r.status, r.raw)
		}
	}
}

func TestInterceptorWithV1SignaturesRefusesUnsignedAndForged(t *testing.T) {
	keys := mustKeys(t, newKey)
	gt := newGRPCTarget(t, WithKeys(keys), WithV1Signatures())
	signed := func(k *Keys, token uint64) metadata.MD {
		r := sampleRun()
		r.Token = token
		md := r.Metadata()
		md.Set("x-raftcron-signature", k.Sign(r))
		return md
	}
	for name, md := range map[string]metadata.MD{
		"unsigned": mdFor(1<<62, sampleRun().IdempotencyKey),
		"forged":   signed(mustKeys(t, strings.Repeat("f", 40)), 1<<62),
	} {
		if code, msg := gt.check(md, "billing"); code != codes.Unauthenticated {
			t.Errorf("%s: %v %q, want Unauthenticated", name, code, msg)
		}
	}
	if h, _ := gt.fence.Guard.Highest(context.Background(), "nightly-billing"); h != 0 || gt.calls.Load() != 0 {
		t.Fatalf("refused calls reached the service %d times, high-water mark %d", gt.calls.Load(), h)
	}
	if code, msg := gt.check(signed(keys, 42), "billing"); code != codes.OK {
		t.Fatalf("genuine run: %v %q", code, msg)
	}
}
