package fsm

import pb "github.com/raftcron/raftcron/proto/raftcron/v1"

// CommandVersion is the highest command version this build applies.
// Version 2 added the ACL commands.
const CommandVersion uint32 = 2

// VersionOf is the command version that introduced cmd's kind: a node
// older than it cannot apply cmd.
func VersionOf(cmd *pb.Command) uint32 {
	switch cmd.GetKind().(type) {
	case *pb.Command_BootstrapAcl, *pb.Command_CreateAclToken, *pb.Command_DeleteAclToken:
		return 2
	default:
		return 1
	}
}
