"""raftcron for Python: run jobs as a worker (raftcron.worker); verify dispatches and fence
writes (raftcron.fence)."""
