//go:build !unix

package dispatch

import "os/exec"

// setProcAttr does nothing here: no process groups, no Pdeathsig, and no
// switching users (the node refuses --exec-user where it is not root, which
// is everywhere here).
func setProcAttr(*exec.Cmd, *User) {}

// killGroup kills the direct child only.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// endGroup does nothing here.
func endGroup(*exec.Cmd) (exited bool) { return false }
