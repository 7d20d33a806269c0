//go:build !unix

package proc

import "os/exec"

// killGroup kills the direct child only.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// endGroup does nothing here.
func endGroup(*exec.Cmd) (exited bool) { return false }
