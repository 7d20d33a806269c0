//go:build !linux

package proc

import "os/exec"

// Containment is ContainNone here: no cgroups, no subreaper; a run's
// process group alone is killed.
func Containment() string { return ContainNone }

func startLaunched(cmd *exec.Cmd) error { return cmd.Start() }

func forgetLaunched(int) {}

// box contains nothing here.
type box struct{}

func openBox(string) *box { return &box{} }

func (*box) start(cmd *exec.Cmd) error { return cmd.Start() }

func (*box) kill() {}

func (*box) close() {}
