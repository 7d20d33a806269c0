package proc

import (
	"fmt"
	"os/user"
	"strconv"
)

// User is whom a command's children run as (a node's or a worker's
// --exec-user), instead of the caller's own user.
type User struct {
	Name   string
	UID    uint32
	GID    uint32   // primary group
	Groups []uint32 // supplementary groups, the primary one included
}

// LookupUser resolves a user name, or a numeric user id, with its groups.
// Switching to the user takes privilege (the caller must run as root);
// that is the caller's check.
func LookupUser(name string) (*User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, numErr := strconv.ParseUint(name, 10, 32); numErr != nil {
			return nil, err
		}
		if u, err = user.LookupId(name); err != nil {
			return nil, err
		}
	}
	uid, err := parseID("uid", u.Uid)
	if err != nil {
		return nil, err
	}
	gid, err := parseID("gid", u.Gid)
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("groups of %s: %w", u.Username, err)
	}
	out := &User{Name: u.Username, UID: uid, GID: gid}
	for _, s := range ids {
		g, err := parseID("group id", s)
		if err != nil {
			return nil, err
		}
		out.Groups = append(out.Groups, g)
	}
	return out, nil
}

func parseID(what, s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a number: only POSIX users are supported", what, s)
	}
	return uint32(n), nil
}
