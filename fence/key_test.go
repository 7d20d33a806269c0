package fence

import (
	"errors"
	"testing"
	"time"
)

func TestKeyForms(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	if got := SlotKey("nightly-billing", at); got != "nightly-billing/2026-11-22T01:02:03Z" {
		t.Errorf("SlotKey = %q", got)
	}
	if got := RunKey("nightly-billing", "manual", "nightly-billing-7"); got != "nightly-billing/manual/nightly-billing-7" {
		t.Errorf("RunKey = %q", got)
	}
}

// A v1 signature verifies with either key its signed fields make, and with no
// other key: a run kind after manual is signed by v2 only.
func TestVerifyAcceptsTheTwoKeysOfTheSignedFields(t *testing.T) {
	keys := mustKeys(t, newKey)
	sig := keys.Sign(sampleRun())
	for key, ok := range map[string]bool{
		"nightly-billing/2026-11-22T01:02:03Z": true,
		"nightly-billing/manual/r-0001":        true,
		"nightly-billing/chained/r-0001":       false,
		"nightly-billing/2026-11-22T01:02:04Z": false,
		"nightly-billing/manual/r-0002":        false,
		"nightly-billing/Manual/r-0001":        false,
		"nightly-billing//r-0001":              false,
		"nightly-billing/r-0001":               false,
		"nightly-billing/manual/r-0001/x":      false,
		"payroll/manual/r-0001":                false,
		"manual/r-0001":                        false,
	} {
		r := sampleRun()
		r.IdempotencyKey = key
		err := keys.Verify(r, sig)
		if ok && err != nil {
			t.Errorf("key %q: %v, want accepted", key, err)
		}
		if !ok && !errors.Is(err, ErrBadSignature) {
			t.Errorf("key %q: %v, want ErrBadSignature", key, err)
		}
	}
}
