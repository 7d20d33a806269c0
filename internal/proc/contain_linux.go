package proc

import (
	"os/exec"
	"sync"
)

// contain is the containment of this process's runs, decided once, at the
// first run or Containment call: a cgroup per run where this process can make
// one, the subreaper elsewhere. (A variable: tests try both.)
var contain = sync.OnceValues(func() (string, *runCgroups) {
	if cg, err := probeCgroups(); err == nil {
		return ContainCgroup, cg
	}
	if subreaper() != nil {
		return ContainNone, nil
	}
	return ContainSubreaper, nil
})

// subreaper makes this process a child subreaper, once.
var subreaper = sync.OnceValue(becomeSubreaper)

// Containment says how this process ends what its runs leave behind:
// ContainCgroup, ContainSubreaper, or ContainNone. The first call decides,
// and makes this process a subreaper if it comes to that.
func Containment() string {
	mode, _ := contain()
	return mode
}

// startLaunched starts a launcher's child (Start), registered so that no
// sweep of subreaper mode takes it for a run's orphan.
func startLaunched(cmd *exec.Cmd) error { return theReaper.start(cmd, "") }

// forgetLaunched unregisters a launcher's child once it is reaped.
func forgetLaunched(pid int) { theReaper.forget(pid, "") }

// box is what one run's processes are contained in.
type box struct {
	mode string
	mark string     // subreaper: the run's mark
	cg   *runCgroup // cgroup: the run's cgroup
	pid  int        // the run's child, once started
}

// openBox prepares the containment of a run marked mark. A run whose cgroup
// cannot be made (the parent's limits, say) falls back to the subreaper.
func openBox(mark string) *box {
	mode, cgroups := contain()
	b := &box{mode: mode, mark: mark}
	if mode != ContainCgroup {
		return b
	}
	cg, err := cgroups.newRun()
	if err == nil {
		b.cg = cg
		return b
	}
	if subreaper() == nil {
		b.mode = ContainSubreaper
	} else {
		b.mode = ContainNone
	}
	return b
}

// start starts cmd inside the box.
func (b *box) start(cmd *exec.Cmd) error {
	switch {
	case b.cg != nil:
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(b.cg.fd.Fd())
		if err := cmd.Start(); err != nil {
			return err
		}
	case b.mode == ContainSubreaper:
		if err := theReaper.start(cmd, b.mark); err != nil {
			return err
		}
	default:
		if err := cmd.Start(); err != nil {
			return err
		}
	}
	b.pid = cmd.Process.Pid
	return nil
}

// kill ends every process the run left: its cgroup, or the orphans it marked.
func (b *box) kill() {
	switch {
	case b.cg != nil:
		b.cg.kill()
	case b.mode == ContainSubreaper:
		theReaper.sweep(b.mark)
	}
}

// close ends what is left once the run's child is reaped (or never started),
// and removes the cgroup or unregisters the run.
func (b *box) close() {
	switch {
	case b.cg != nil:
		b.cg.remove()
	case b.mode == ContainSubreaper && b.pid != 0:
		theReaper.forget(b.pid, b.mark)
		theReaper.sweep(b.mark)
	}
}
