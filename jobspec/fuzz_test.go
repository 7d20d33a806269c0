package jobspec

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func FuzzValidate(f *testing.F) {
	f.Add("nightly-billing", "0 2 * * *", "Europe/Berlin", "http://billing.internal/run")
	f.Add("Bad Name", "61 * * * *", "Mars/Olympus", "/run")
	f.Add("a", "TZ=", "Local", "ftp://x")
	f.Add("b", "CRON_TZ=", "", "http://")
	f.Add("c", "0 0 30 2 *", "../etc/passwd", "http://[::1]:80/x")
	f.Add("d", "@every 1.5s", "Etc/GMT+5", "https://user:pw@h/p?q#f")
	f.Add("", "", "", "")
	f.Add("e\n", "@every 5\nx", "UTC\x00", "http://a\x7f")
	f.Fuzz(func(t *testing.T, name, sched, zone, url string) {
		spec := &pb.JobSpec{Name: name, Schedule: sched, Timezone: zone, Http: &pb.HttpTarget{Url: url}}
		Normalize(spec)
		once := proto.Clone(spec)
		Normalize(spec)
		if !proto.Equal(once, spec) {
			t.Fatalf("Normalize not idempotent: %v then %v", once, spec)
		}
		err := Validate(spec, now)
		if err == nil {
			return
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Violations) == 0 {
			t.Fatalf("error %v is not a non-empty *ValidationError", err)
		}
		for _, v := range ve.Violations {
			if v.Field == "" || v.Rule == "" {
				t.Fatalf("empty field or rule in %+v", ve.Violations)
			}
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\r\n") {
			t.Fatalf("message spans lines: %q", msg)
		}
	})
}
