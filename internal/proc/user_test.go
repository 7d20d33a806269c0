//go:build unix

package proc

import (
	"testing"

	"github.com/raftcron/raftcron/internal/testutil"
)

func TestLookupUserByNameAndID(t *testing.T) {
	t.Parallel()
	byName, err := LookupUser("root")
	if err != nil {
		testutil.SkipOrFail(t, "no user root here: %v", err)
	}
	byID, err := LookupUser("0")
	if err != nil || byName.UID != 0 || byID.Name != "root" || byName.GID != byID.GID {
		t.Fatalf("root by name %+v, by id %+v (%v)", byName, byID, err)
	}
	if _, err := LookupUser("raftcron-no-such-user"); err == nil {
		t.Fatal("an unknown user was found")
	}
}
