package jobspec

import (
	"errors"
	"slices"
	"strings"
	"testing"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestSecretReferencesValidate(t *testing.T) {
	spec := &pb.JobSpec{Name: "billing", Schedule: "@hourly", Http: &pb.HttpTarget{
		Url:     "https://${secret:user}:${secret:pw}@${secret:host}.example/run?key=${secret:key}",
		Headers: map[string]string{"Authorization": "Bearer ${secret:token}"},
		Body:    `{"password":"${secret:pw}"}`,
	}}
	if err := Validate(spec, now); err != nil {
		t.Fatalf("a spec with references: %v", err)
	}
	var got []string
	for _, r := range SecretRefs(spec) {
		got = append(got, r.Name+"@"+r.Field)
	}
	want := []string{"user@http.url", "pw@http.url", "host@http.url", "key@http.url", "token@http.headers.Authorization"}
	if !slices.Equal(got, want) {
		t.Errorf("SecretRefs = %v, want %v", got, want)
	}

	for field, bad := range map[string]*pb.JobSpec{
		"http.headers.Authorization": {Name: "a", Schedule: "@hourly", Http: &pb.HttpTarget{Url: "https://h/", Headers: map[string]string{"Authorization": "${secret:}"}}},
		"http.body":                  {Name: "a", Schedule: "@hourly", Http: &pb.HttpTarget{Url: "https://h/", Body: "${secret:x"}},
		"exec.env.PW":                {Name: "a", Schedule: "@hourly", Exec: &pb.ExecTarget{Command: []string{"/bin/true"}, Env: map[string]string{"PW": "${secret:a b}"}}},
		"worker.env.PW":              {Name: "a", Schedule: "@hourly", Worker: &pb.WorkerTarget{Pool: "p", Command: []string{"/bin/true"}, Env: map[string]string{"PW": "${secret:-x}"}}},
	} {
		err := Validate(bad, now)
		var ve *ValidationError
		if !errors.As(err, &ve) || !slices.ContainsFunc(ve.Violations, func(v Violation) bool {
			return v.Field == field && strings.Contains(v.Rule, "${secret:NAME}")
		}) {
			t.Errorf("a malformed reference in %s: %v, want a violation of that field", field, err)
		}
	}
}
