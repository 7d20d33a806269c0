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

// The alerts fire on the series they are meant for: promtool's unit tests
// in prometheus/alerts_test.yaml.
func TestAlertRulesFireOnTheirSignals(t *testing.T) {
	promtool := tool(t, "promtool", "install Debian's prometheus package (.ci/run does)")
	cmd := exec.Command(promtool, "test", "rules", "alerts_test.yaml")
	cmd.Dir = "prometheus"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
