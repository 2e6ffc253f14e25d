package activedirectoryidp

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
)

// TestOpen opens objects with a Connect that reaches hosts named good...: a working domain
// controller is connected to once per inputs, a failing one at every opening.
func TestOpen(t *testing.T) {
	bind := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bind", ResourceVersion: "1"}, Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("svc@example.com"), "password": []byte("pw")}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	caches := map[string]*connectors.ProbeCache{}
	connects := 0
	flakyDown := false
	connect := func(_ context.Context, cfg ldapclient.Config, _ *corev1.Secret, gen int64) (*ldapclient.Provider, []metav1.Condition, error) {
		connects++
		if strings.HasPrefix(cfg.Host, "flaky") && flakyDown {
			return nil, []metav1.Condition{
				{Type: idpv1alpha1.ConditionSearchBaseFound, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonUsingConfigurationFromSpec, ObservedGeneration: gen},
				{Type: idpv1alpha1.ConditionLDAPConnectionValid, Status: metav1.ConditionFalse, Reason: idpv1alpha1.ReasonLDAPConnectionError, ObservedGeneration: gen},
			}, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		if !strings.HasPrefix(cfg.Host, "good") && !strings.HasPrefix(cfg.Host, "flaky") {
			return nil, []metav1.Condition{
				{Type: idpv1alpha1.ConditionSearchBaseFound, Status: metav1.ConditionFalse, Reason: idpv1alpha1.ReasonErrorFetchingSearchBase, ObservedGeneration: gen},
				{Type: idpv1alpha1.ConditionLDAPConnectionValid, Status: metav1.ConditionUnknown, Reason: idpv1alpha1.ReasonUnableToValidate, ObservedGeneration: gen},
			}, errors.New("invalid credentials")
		}
		cfg.UserSearch.Base, cfg.GroupSearch.Base = "dc=example", "dc=example" // as if read from the rootDSE
		p, err := New(cfg)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return p, []metav1.Condition{
			{Type: idpv1alpha1.ConditionSearchBaseFound, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonSuccess, ObservedGeneration: gen},
			{Type: idpv1alpha1.ConditionLDAPConnectionValid, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonSuccess, ObservedGeneration: gen},
		}, nil
	}
	openIDP := func(name, host string) (connectors.Connector, []metav1.Condition) {
		t.Helper()
		if caches[name] == nil {
			caches[name] = connectors.NewProbeCache(func() time.Time { return now })
		}
		idp := &idpv1alpha1.ActiveDirectoryIdentityProvider{
			ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
			Spec:       idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: host, Bind: idpv1alpha1.ActiveDirectoryIdentityProviderBind{SecretName: "bind"}},
		}
		in := connectors.Inputs{
			Secret:   func(string) (*corev1.Secret, error) { return bind, nil },
			CABundle: func(string, *idpv1alpha1.TLSSpec) ([]byte, error) { return nil, nil },
			Probes:   caches[name],
		}
		c, conds, err := open(context.Background(), idp, in, connect)
		if err != nil {
			t.Fatal(err)
		}
		return c, conds
	}
	for range 2 {
		ready, conds := openIDP("ready", "good.ad.example")
		if ready == nil || len(conds) != 4 || connectors.PhaseOf(conds) != idpv1alpha1.PhaseReady {
			t.Errorf("ready: connector %v, conditions %+v; want a connector and 4 true conditions", ready, conds)
		}
		down, conds := openIDP("down", "down.ad.example")
		if down != nil || connectors.PhaseOf(conds) != idpv1alpha1.PhaseError {
			t.Errorf("down: connector %v, conditions %+v; want none, phase Error", down, conds)
		}
	}
	if connects != 3 {
		t.Errorf("%d connects over two openings, want 3 (the working one is cached)", connects)
	}

	// A domain controller that refuses connections after a successful connect keeps its connector.
	if c, _ := openIDP("flaky", "flaky.ad.example"); c == nil {
		t.Fatal("flaky: no connector while it answers")
	}
	caches["flaky"].Expire()
	flakyDown = true
	if c, conds := openIDP("flaky", "flaky.ad.example"); c == nil || connectors.PhaseOf(conds) != idpv1alpha1.PhaseError {
		t.Errorf("flaky, refusing connections: connector %v, conditions %+v; want the connector, phase Error", c, conds)
	}
}
