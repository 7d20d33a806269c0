package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// A run's cgroup (cgroup v2): the run's child is cloned straight into it
// (CLONE_INTO_CGROUP, so it cannot fork before it is there), every process it
// starts is born in it whatever it does to its session or process group, and
// writing "1" to cgroup.kill SIGKILLs them all at once, forks in flight
// included (Linux 5.14). The runs of one process live below one parent,
// runParentPrefix and the process's pid, in the cgroup the process runs in.

// runParentPrefix names the parent of one process's run cgroups.
const runParentPrefix = "raftcron-runs-"

// cgroupDrain bounds the wait for a killed cgroup to empty before it is
// removed.
const cgroupDrain = 2 * time.Second

// runCgroups makes the cgroups of this process's runs.
type runCgroups struct {
	parent string // where the runs' cgroups are made
	seq    atomic.Uint64
}

// probeCgroups finds the cgroup2 mount and this process's cgroup in it,
// removes the parents that processes which no longer exist left behind, and
// makes this process's parent. It fails where no cgroup v2 is mounted, where
// this process may not create one (not root, no delegation, a read-only
// mount), and where the kernel has no cgroup.kill.
func probeCgroups() (*runCgroups, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(mount, own)
	sweepStaleParents(base)
	parent := filepath.Join(base, runParentPrefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup %s: %w", parent, err)
	}
	c := &runCgroups{parent: parent}
	if err := c.check(); err != nil {
		_ = os.Remove(parent)
		return nil, fmt.Errorf("cgroup %s: %w", parent, err)
	}
	return c, nil
}

// probeProgram is a path that names no program: starting it clones a child
// and fails its exec, which tells a clone into a cgroup that works (the
// exec's ENOENT) from one that does not (the clone's own error) without
// running anything.
const probeProgram = "/nonexistent/raftcron-cgroup-probe"

// check makes sure a run's cgroup can be made, a child cloned into it and the
// cgroup killed (cgroup.kill: Linux 5.14).
func (c *runCgroups) check() error {
	g, err := c.newRun()
	if err != nil {
		return err
	}
	defer g.remove()
	if err := syscall.Access(filepath.Join(g.path, "cgroup.kill"), 2 /* W_OK */); err != nil {
		return fmt.Errorf("cgroup.kill: %w (Linux 5.14 or later is needed)", err)
	}
	cmd := exec.Command(probeProgram)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(g.fd.Fd())}
	if err := cmd.Start(); !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("cloning a child into a cgroup: %v", err)
	}
	return nil
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup,
// or /sys/fs/cgroup/unified on a hybrid host).
func cgroup2Mount() (string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, fs := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(fs) >= 1 && fs[0] == "cgroup2" && fields[3] == "/" {
			return fields[4], nil
		}
	}
	return "", errors.New("no cgroup2 mount")
}

// ownCgroup is this process's cgroup v2 path ("0::/path" in /proc/self/cgroup).
func ownCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(path, "/") {
			return path, nil
		}
	}
	return "", errors.New("no cgroup v2 path in /proc/self/cgroup")
}

// sweepStaleParents kills and removes what runs of processes that no longer
// exist left in base: a node killed with SIGKILL could not end its runs'
// descendants (Pdeathsig reaches the direct child alone). A parent whose pid
// is alive is left alone, even if the pid now names another process.
func sweepStaleParents(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), runParentPrefix))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runParentPrefix) || err != nil || processExists(pid) {
			continue
		}
		parent := filepath.Join(base, e.Name())
		runs, _ := os.ReadDir(parent)
		for _, r := range runs {
			if r.IsDir() {
				(&runCgroup{path: filepath.Join(parent, r.Name())}).remove()
			}
		}
		_ = os.Remove(parent)
	}
}

func processExists(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH
}

// runCgroup is one run's cgroup; fd is its directory, open while the child is
// cloned into it.
type runCgroup struct {
	path string
	fd   *os.File
}

// newRun makes a cgroup for one run.
func (c *runCgroups) newRun() (*runCgroup, error) {
	path := filepath.Join(c.parent, strconv.FormatUint(c.seq.Add(1), 10))
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, err
	}
	fd, err := os.Open(path)
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	return &runCgroup{path: path, fd: fd}, nil
}

// kill SIGKILLs every process in the cgroup.
func (g *runCgroup) kill() {
	_ = os.WriteFile(filepath.Join(g.path, "cgroup.kill"), []byte("1"), 0)
}

// remove kills what is left, waits (bounded) until the cgroup is empty and
// removes it. A cgroup that does not empty in time stays behind, for the
// sweep of a later start.
func (g *runCgroup) remove() {
	if g.fd != nil {
		_ = g.fd.Close()
	}
	g.kill()
	deadline := time.Now().Add(cgroupDrain)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := os.Remove(g.path)
		if err == nil || errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return
		}
		time.Sleep(wait)
	}
}
