package federationdomain

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"sealion.dev/servers/supervisor/internal/signingkeys"
)

// The signing key's time is the Secret's creation for a Secret an older release wrote, the
// annotation's once a key is generated, and the series goes with its FederationDomain.
func TestSigningKeyGeneratedMetric(t *testing.T) {
	RegisterMetrics() // component-base metrics record nothing until registered
	f := fd("fd", "https://issuer.example.com")
	data, err := signingkeys.NewJWKS()
	if err != nil {
		t.Fatal(err)
	}
	written := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	older := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "fd-jwks", Namespace: namespace, CreationTimestamp: metav1.NewTime(written),
			OwnerReferences: []metav1.OwnerReference{{Kind: "FederationDomain", Name: "fd", UID: f.UID, Controller: ptr.To(true)}},
		},
		Type: signingkeys.JWKSSecretType, Data: data,
	}
	e := newEnv(t, []runtime.Object{older}, f, ldapIDP())
	generated := func() float64 {
		v, err := testutil.GetGaugeMetricValue(keyGenerated.WithLabelValues("fd"))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	e.sync()
	if got := generated(); got != float64(written.Unix()) {
		t.Errorf("a Secret without the annotation: %v, want its creation %v", got, written.Unix())
	}

	if err := e.kube.CoreV1().Secrets(namespace).Delete(e.ctx, "fd-jwks", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(e.ctx, func() bool { _, err := e.c.secrets.Get("fd-jwks"); return apierrors.IsNotFound(err) }) {
		t.Fatal("the cache never lost the deleted Secret")
	}
	before := time.Now().Truncate(time.Second)
	e.sync()
	annotation := e.secret("fd-jwks").Annotations[signingkeys.GeneratedAtAnnotation]
	if at, err := time.Parse(time.RFC3339, annotation); err != nil || at.Before(before) {
		t.Errorf("the new key's Secret has %s %q; want a time from %v on", signingkeys.GeneratedAtAnnotation, annotation, before)
	}
	if got := generated(); got < float64(before.Unix()) || got > float64(time.Now().Unix()) {
		t.Errorf("after the key was replaced: %v, want about %v", got, before.Unix())
	}

	if err := e.supervisor.ConfigV1alpha1().FederationDomains(namespace).Delete(e.ctx, "fd", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(e.ctx, func() bool { l, _ := e.c.federationDomains.List(labels.Everything()); return len(l) == 0 }) {
		t.Fatal("the cache never lost the deleted FederationDomain")
	}
	e.sync()
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(""),
		"pinniped_supervisor_signing_key_generated_timestamp_seconds"); err != nil {
		t.Errorf("series left after the FederationDomain was deleted: %v", err)
	}
}
