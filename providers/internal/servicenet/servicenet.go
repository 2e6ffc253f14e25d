// Package servicenet keeps a cluster's Service network on this machine.
//
// kube-proxy rewrites connections to Service addresses with iptables, but it replaces the filter
// and nat tables one after the other. In between, a new connection to a ClusterIP is neither
// rejected nor rewritten and follows the default route off the machine; whatever answers there
// keeps the connection, and kube-apiserver reuses it for an aggregated API for good (its
// APIService then reports 404 from a stranger). Routing the Service network into a local bridge
// with no ports makes such a connection fail on this machine instead, and the next one is
// rewritten as it should be.
package servicenet

import (
	"context"
	"net/netip"

	"sealion.dev/providers/internal/command"
)

// Sink creates device, a bridge with no ports, and routes cidr to it. Rewritten connections are
// routed again after the rewrite and never see it. Deleting the device removes the route.
func Sink(ctx context.Context, run command.Runner, device string, cidr netip.Prefix) error {
	for _, args := range [][]string{
		{"link", "add", device, "type", "bridge"},
		{"link", "set", device, "up"},
		{"route", "add", cidr.String(), "dev", device},
	} {
		if err := run.Run(ctx, "ip", args...); err != nil {
			return err
		}
	}
	return nil
}
