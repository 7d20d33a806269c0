package proc

// How a process ends what its runs leave behind (Containment): whatever a
// run starts must end with it, even a process that left the run's process
// group (setsid) or lost its parent (a daemon's double fork), which the
// group's kill does not reach.
const (
	// ContainCgroup: each run in a cgroup v2 of its own, killed whole
	// (cgroup.kill) when the run ends.
	ContainCgroup = "cgroup"
	// ContainSubreaper: this process is a child subreaper; the orphans of a
	// run are re-parented to it, told apart by the run's mark
	// (Command.Mark), and killed when the run ends.
	ContainSubreaper = "subreaper"
	// ContainNone: only the run's process group is killed.
	ContainNone = "none"
)
