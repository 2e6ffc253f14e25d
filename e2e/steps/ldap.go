package steps

import (
	"context"
	"net"

	"sealion.dev/fixtures/ldap"
	"sealion.dev/fixtures/ldap/incluster"
	"sealion.dev/providers"
)

// SlapdImage is the LDAP fixture's image (tools/images slapd), run in clusters whose pods cannot
// reach this machine; the installs push or load it with the server image.
const SlapdImage = "localhost/sealion/slapd-fixture:dev"

// StartLDAPForCluster runs the LDAP fixture where the cluster's pods (the Supervisor) reach it:
// on this machine's address for a cluster of this machine, else in the cluster
// (fixtures/ldap/incluster), where this machine seeds and changes it through a port-forward.
// Users default as ldap.Start's.
func StartLDAPForCluster(ctx context.Context, users []ldap.User) (*ldap.LDAP, error) {
	if c := ClusterFrom(ctx); c != nil && FixturesInCluster(c.Info) {
		return incluster.Start(ctx, incluster.Options{Kubeconfig: c.Kubeconfig, Image: Image(ctx, SlapdImage), Users: users})
	}
	hostIP, err := providers.HostIPv4()
	if err != nil {
		return nil, err
	}
	return ldap.Start(ctx, ldap.Options{ListenIP: net.ParseIP(hostIP), Users: users})
}
