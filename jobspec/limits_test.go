package jobspec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Each limit is checked on its own field, with a message naming the limit;
// a spec within them passes.
func TestLimitsNameTheFieldAndTheLimit(t *testing.T) {
	t.Parallel()
	l := Limits{SpecBytes: 4096, Headers: 2, Env: 1, Args: 3}
	if err := l.Check(fullJob()); err != nil {
		t.Fatalf("a spec within the limits: %v", err)
	}
	many := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("K%d", i)] = "v"
		}
		return m
	}
	for _, tc := range []struct {
		name, field, limit string
		spec               func() *pb.JobSpec
	}{
		{"headers", "http.headers", "limit of 2 headers", func() *pb.JobSpec {
			s := fullJob()
			s.Http.Headers = many(3)
			return s
		}},
		{"env", "exec.env", "limit of 1 variables", func() *pb.JobSpec {
			s := fullJob()
			s.Http, s.Exec = nil, &pb.ExecTarget{Command: []string{"/bin/true"}, Env: many(2)}
			return s
		}},
		{"args", "exec.command", "limit of 3 arguments", func() *pb.JobSpec {
			s := fullJob()
			s.Http, s.Exec = nil, &pb.ExecTarget{Command: []string{"/bin/echo", "a", "b", "c"}}
			return s
		}},
		{"worker env", "worker.env", "limit of 1 variables", func() *pb.JobSpec {
			s := fullJob()
			s.Http, s.Worker = nil, &pb.WorkerTarget{Pool: "batch", Command: []string{"/bin/true"}, Env: many(2)}
			return s
		}},
		{"worker args", "worker.command", "limit of 3 arguments", func() *pb.JobSpec {
			s := fullJob()
			s.Http, s.Worker = nil, &pb.WorkerTarget{Pool: "batch", Command: []string{"/bin/echo", "a", "b", "c"}}
			return s
		}},
		{"size", "spec", "limit of 4096 bytes", func() *pb.JobSpec {
			s := fullJob()
			s.Http.Body = strings.Repeat("x", 5000)
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := l.Check(tc.spec())
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Violations) != 1 {
				t.Fatalf("Check: %v, want one violation", err)
			}
			if v := ve.Violations[0]; v.Field != tc.field || !strings.Contains(v.Rule, tc.limit) {
				t.Errorf("violation %+v, want field %s naming the %s", v, tc.field, tc.limit)
			}
		})
	}
}

// The zero Limits are the defaults, which a spec at the fixed maxima of
// Validate fits.
func TestZeroLimitsAreTheDefaults(t *testing.T) {
	t.Parallel()
	if got := (Limits{}).withDefaults(); got != DefaultLimits {
		t.Fatalf("zero limits = %+v, want %+v", got, DefaultLimits)
	}
	s := fullJob()
	s.Http.Body = strings.Repeat("x", MaxBodyLen)
	s.Http.Url = "http://billing.internal/" + strings.Repeat("u", MaxURLLen-len("http://billing.internal/"))
	if err := (Limits{}).Check(s); err != nil {
		t.Fatalf("a spec at the fixed maxima: %v", err)
	}
}
