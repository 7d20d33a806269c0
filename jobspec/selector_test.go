package jobspec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/raftcron/raftcron/jobspec"
)

func TestValidateSelectorAppliesTheLabelRules(t *testing.T) {
	t.Parallel()
	if err := jobspec.ValidateSelector(map[string]string{"team": "billing", "app.kubernetes.io/name": "x"}); err != nil {
		t.Fatalf("a valid selector: %v", err)
	}
	if err := jobspec.ValidateSelector(nil); err != nil {
		t.Fatalf("an empty selector: %v", err)
	}
	err := jobspec.ValidateSelector(map[string]string{"-team": "x", "ok": strings.Repeat("é", 257)})
	var ve *jobspec.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) != 2 {
		t.Fatalf("ValidateSelector = %v, want two violations", err)
	}
	for _, v := range ve.Violations {
		if v.Field != "selector" {
			t.Errorf("violation %v is not reported under selector", v)
		}
	}
}
