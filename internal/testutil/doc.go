// Package testutil holds what the tests of every package share: one way to
// wait for a condition with a deadline (WaitFor), one way to say that a
// test cannot run here for want of root or a tool (SkipOrFail, NeedRoot,
// NeedTool; under CI=true they fail the test instead, so a missing install
// step cannot hide behind a skip), the raftcron binary the multi-process
// tests run (Binary), a file of the test's own (WriteFile), the
// --exec-user of nodes and workers that run the tests' commands (ExecUser),
// and a loopback address whose ports a restarted server can bind again
// (LoopbackHost).
//
// It imports only the standard library, so that the tests of any package,
// internal/proc's included, may use it.
package testutil
