package devcluster

import (
	"context"
	"errors"
)

// bootstrapACL makes the demo's management token, as `raftcron acl
// bootstrap` would: dev uses it for the demo job and prints it for a second
// terminal. It runs once every node is ready, so a leader exists. Nothing
// to do with --insecure, whose nodes run without ACLs.
func (d *demo) bootstrapACL(ctx context.Context) error {
	if d.opts.insecure {
		return nil
	}
	name, err := d.cluster.BootstrapACL(ctx)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		return nil // interrupted: stop quietly
	case err != nil:
		return err
	}
	d.out.printf("acl        management token %q made by acl bootstrap (RAFTCRON_TOKEN below)", name)
	return nil
}
