package connectors

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"k8s.io/component-base/metrics/testutil"

	"sealion.dev/servers/supervisor/internal/issuer"
)

// Each call is counted by type, operation and what came of it; a type not ours is "unknown".
func TestCallMetrics(t *testing.T) {
	RegisterMetrics() // component-base metrics count nothing until registered
	for _, c := range []struct {
		typ    issuer.IdentityProviderType
		err    error
		labels [3]string
	}{
		{issuer.TypeLDAP, nil, [3]string{"ldap", OpPassword, "success"}},
		{issuer.TypeLDAP, &Error{Hint: "wrong password"}, [3]string{"ldap", OpPassword, "refused"}},
		{issuer.TypeLDAP, fmt.Errorf("binding: %w", &Error{Unavailable: true}), [3]string{"ldap", OpPassword, "unavailable"}},
		{issuer.TypeLDAP, errors.New("bad response"), [3]string{"ldap", OpPassword, "error"}},
		{"made-up", nil, [3]string{"unknown", OpPassword, "success"}},
	} {
		before, _ := testutil.GetCounterMetricValue(upstreamCalls.WithLabelValues(c.labels[:]...))
		_, call := StartCall(context.Background(), c.typ, OpPassword)
		call.End(c.err)
		after, _ := testutil.GetCounterMetricValue(upstreamCalls.WithLabelValues(c.labels[:]...))
		if after-before != 1 {
			t.Errorf("%s, %v: upstream_requests_total%v grew by %v, want 1", c.typ, c.err, c.labels, after-before)
		}
	}
}
