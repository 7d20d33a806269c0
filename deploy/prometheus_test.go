package deploy

import (
	"os/exec"
	"testing"
)

func TestAlertRulesPassPromtool(t *testing.T) {
	promtool := tool(t, "promtool", "install Debian's prometheus package (.ci/run does)")
	out, err := exec.Command(promtool, "check", "rules", "prometheus/alerts.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
