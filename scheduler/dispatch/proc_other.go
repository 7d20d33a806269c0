//go:build !unix

package dispatch

import "os/exec"

// setProcAttr does nothing here: no process groups, no Pdeathsig.
func setProcAttr(*exec.Cmd) {}

// killGroup kills the direct child only.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// endGroup does nothing here.
func endGroup(*exec.Cmd) (exited bool) { return false }
