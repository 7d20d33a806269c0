//go:build !unix

package proc

import (
	"errors"
	"os/exec"
)

// setProcAttr does nothing here: no process groups, no Pdeathsig, and no
// running as another user.
func setProcAttr(_ *exec.Cmd, u *User) error {
	if u != nil {
		return errors.New("running commands as another user is not supported on this system")
	}
	return nil
}

// killGroup kills the direct child only.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// endGroup does nothing here.
func endGroup(*exec.Cmd) (exited bool) { return false }
