package servingcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubetesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorfake "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"sealion.dev/core/certauthority"
	"sealion.dev/core/testing/fakewatch"
)

const (
	namespace  = "concierge"
	service    = "concierge-api"
	hostname   = "concierge-api.concierge.svc"
	apiService = "v1alpha1.login.concierge.pinniped.dev"
	duration   = 30 * 24 * time.Hour
	renew      = 5 * 24 * time.Hour
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func testConfig(clk *clocktesting.FakeClock) Config {
	return Config{
		Namespace:       namespace,
		ServiceName:     service,
		SecretLabels:    map[string]string{"app": "concierge"},
		APIServiceNames: []string{apiService},
		Duration:        duration,
		RenewBefore:     renew,
		Clock:           clk,
	}
}

func newAPIService(name string, caBundle []byte) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apiregistrationv1.APIServiceSpec{GroupPriorityMinimum: 9900, VersionPriority: 15, CABundle: caBundle},
	}
}

// secretData makes Secret content as the controller would at issuedAt, for host, signed by a new
// CA unless signer is given.
func secretData(t *testing.T, host string, issuedAt time.Time, signer *certauthority.CA) map[string][]byte {
	t.Helper()
	clk := certauthority.WithClock(func() time.Time { return issuedAt })
	ca, err := certauthority.New("test CA", duration, clk)
	require.NoError(t, err)
	if signer == nil {
		signer = ca
	}
	certPEM, keyPEM, err := signer.IssueServingCert(host, []string{host}, nil, duration)
	require.NoError(t, err)
	return map[string][]byte{
		SecretKeyCACertificate:       ca.Bundle(),
		SecretKeyCAPrivateKey:        ca.PrivateKeyPEM(),
		SecretKeyTLSCertificateChain: certPEM,
		SecretKeyTLSPrivateKey:       keyPEM,
	}
}

func newSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: DefaultSecretName, Namespace: namespace, ResourceVersion: "7",
			Annotations: map[string]string{"kept": "yes"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

type fixture struct {
	c    *Controller
	kube *kubefake.Clientset
	agg  *aggregatorfake.Clientset
	clk  *clocktesting.FakeClock
	ctx  context.Context
}

// newFixture makes a controller over fake clientsets holding objects, with its informers
// started and synced, so that tests can call sync directly.
func newFixture(t *testing.T, cfg func(*Config), kubeObjects []runtime.Object, apiServices ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)

	f := &fixture{
		kube: kubefake.NewClientset(kubeObjects...),
		agg:  aggregatorfake.NewSimpleClientset(apiServices...),
		clk:  clocktesting.NewFakeClock(t0),
		ctx:  ctx,
	}
	watches := fakewatch.Record(f.kube, f.agg)
	config := testConfig(f.clk)
	if cfg != nil {
		cfg(&config)
	}
	var err error
	f.c, err = New(config, f.kube, f.agg)
	require.NoError(t, err)
	f.c.secretInformers.Start(ctx.Done())
	f.c.apiServiceInformers.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(),
		f.c.secretInformers.Core().V1().Secrets().Informer().HasSynced,
		f.c.apiServiceInformers.Apiregistration().V1().APIServices().Informer().HasSynced))
	watches.Wait(t, 5*time.Second, "secrets", "apiservices")
	f.kube.ClearActions()
	f.agg.ClearActions()
	return f
}

func (f *fixture) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	s, err := f.kube.CoreV1().Secrets(namespace).Get(f.ctx, DefaultSecretName, metav1.GetOptions{})
	require.NoError(t, err)
	return s
}

func (f *fixture) caBundle(t *testing.T, name string) []byte {
	t.Helper()
	a, err := f.agg.ApiregistrationV1().APIServices().Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return a.Spec.CABundle
}

// writes lists the verbs and resources of the mutating calls made through client.
func writes(client interface{ Actions() []kubetesting.Action }) []string {
	var out []string
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// assertServes checks that the provider serves the Secret's certificate, valid for hostname at
// the fake time and issued by the Secret's CA.
func assertServes(t *testing.T, f *fixture, secret *corev1.Secret) {
	t.Helper()
	select {
	case <-f.c.Provider().Ready():
	default:
		t.Fatal("provider not ready")
	}
	certPEM, keyPEM := f.c.Provider().CurrentCertKeyContent()
	assert.Equal(t, secret.Data[SecretKeyTLSCertificateChain], certPEM)
	assert.Equal(t, secret.Data[SecretKeyTLSPrivateKey], keyPEM)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(secret.Data[SecretKeyCACertificate]))
	_, err = pair.Leaf.Verify(x509.VerifyOptions{DNSName: hostname, Roots: roots, CurrentTime: f.clk.Now()})
	require.NoError(t, err)
}

func TestSyncCreatesSecret(t *testing.T) {
	f := newFixture(t, nil, nil, newAPIService(apiService, nil), newAPIService("v1.unrelated", []byte("other")))

	next, err := f.c.sync(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, DefaultResyncPeriod, next)
	assert.Equal(t, []string{"create secrets"}, writes(f.kube))
	assert.Equal(t, []string{"patch apiservices"}, writes(f.agg))

	secret := f.secret(t)
	assert.Equal(t, corev1.SecretTypeOpaque, secret.Type)
	assert.Equal(t, map[string]string{"app": "concierge"}, secret.Labels)
	assertServes(t, f, secret)
	assert.Equal(t, secret.Data[SecretKeyCACertificate], f.caBundle(t, apiService))
	assert.Equal(t, []byte("other"), f.caBundle(t, "v1.unrelated"))

	block, _ := pem.Decode(secret.Data[SecretKeyTLSCertificateChain])
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(duration), leaf.NotAfter)
	assert.Equal(t, []string{hostname}, leaf.DNSNames)
}

func TestSyncKeepsValidSecret(t *testing.T) {
	data := secretData(t, hostname, t0.Add(-time.Hour), nil)
	f := newFixture(t, nil, []runtime.Object{newSecret(data)}, newAPIService(apiService, data[SecretKeyCACertificate]))

	next, err := f.c.sync(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, DefaultResyncPeriod, next)
	assert.Empty(t, writes(f.kube))
	assert.Empty(t, writes(f.agg))
	assertServes(t, f, f.secret(t))

	// Shortly before renewal, the next check is scheduled for the renewal time.
	f.clk.SetTime(t0.Add(-time.Hour).Add(duration - renew - time.Minute))
	next, err = f.c.sync(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, time.Minute, next)
	assert.Empty(t, writes(f.kube))
}

func TestSyncRenews(t *testing.T) {
	issuedAt := t0.Add(-(duration - renew))
	old := secretData(t, hostname, issuedAt, nil)
	f := newFixture(t, nil, []runtime.Object{newSecret(old)}, newAPIService(apiService, old[SecretKeyCACertificate]))

	_, err := f.c.sync(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"update secrets"}, writes(f.kube))
	secret := f.secret(t)
	assert.NotEqual(t, old[SecretKeyCACertificate], secret.Data[SecretKeyCACertificate])
	assert.NotEqual(t, old[SecretKeyTLSCertificateChain], secret.Data[SecretKeyTLSCertificateChain])
	assert.Equal(t, "yes", secret.Annotations["kept"], "renewal must keep the Secret's metadata")
	assertServes(t, f, secret)
	assert.Equal(t, secret.Data[SecretKeyCACertificate], f.caBundle(t, apiService))
}

// TestSyncAfterRenewalWithAStaleCache: right after a renewal the informer's cache may still hold
// the Secret the renewal replaced. The next sync must neither serve the old certificate again
// (the APIServices already trust the new CA) nor renew a second time.
func TestSyncAfterRenewalWithAStaleCache(t *testing.T) {
	issuedAt := t0.Add(-(duration - renew))
	old := secretData(t, hostname, issuedAt, nil)
	f := newFixture(t, nil, []runtime.Object{newSecret(old)}, newAPIService(apiService, old[SecretKeyCACertificate]))
	cached, err := f.c.secrets.Get(DefaultSecretName)
	require.NoError(t, err)
	stale := cached.DeepCopy()

	_, err = f.c.sync(f.ctx)
	require.NoError(t, err)
	renewed := f.secret(t)
	require.NoError(t, f.c.secretInformers.Core().V1().Secrets().Informer().GetIndexer().Update(stale))
	f.kube.ClearActions()
	listener := &countingListener{}
	f.c.Provider().AddListener(listener)

	_, err = f.c.sync(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, writes(f.kube), "a second renewal")
	assert.Zero(t, listener.count.Load(), "the served certificate changed")
	assertServes(t, f, renewed)
	assert.Equal(t, renewed.Data[SecretKeyCACertificate], f.caBundle(t, apiService))
}

func TestSyncReplacesUnusableSecret(t *testing.T) {
	valid := secretData(t, hostname, t0, nil)
	otherCA, err := certauthority.New("other", duration)
	require.NoError(t, err)
	with := func(key string, value []byte) map[string][]byte {
		d := map[string][]byte{}
		for k, v := range valid {
			d[k] = v
		}
		if value == nil {
			delete(d, key)
		} else {
			d[key] = value
		}
		return d
	}
	fromOtherCA := secretData(t, hostname, t0, otherCA)
	fromOtherCA[SecretKeyCACertificate], fromOtherCA[SecretKeyCAPrivateKey] = valid[SecretKeyCACertificate], valid[SecretKeyCAPrivateKey]

	tests := []struct {
		name string
		data map[string][]byte
	}{
		{name: "empty", data: nil},
		{name: "missing TLS key", data: with(SecretKeyTLSPrivateKey, nil)},
		{name: "garbage CA", data: with(SecretKeyCACertificate, []byte("garbage"))},
		{name: "garbage certificate", data: with(SecretKeyTLSCertificateChain, []byte("garbage"))},
		{name: "key of another certificate", data: with(SecretKeyTLSPrivateKey, otherCA.PrivateKeyPEM())},
		{name: "certificate for another Service", data: secretData(t, "other.concierge.svc", t0, nil)},
		{name: "certificate from another CA", data: fromOtherCA},
		{name: "expired", data: secretData(t, hostname, t0.Add(-2*duration), nil)},
		{name: "not yet valid", data: secretData(t, hostname, t0.Add(time.Hour), nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, []runtime.Object{newSecret(tt.data)}, newAPIService(apiService, nil))
			_, err := f.c.sync(f.ctx)
			require.NoError(t, err)
			assert.Equal(t, []string{"update secrets"}, writes(f.kube))
			secret := f.secret(t)
			assertServes(t, f, secret)
			assert.Equal(t, secret.Data[SecretKeyCACertificate], f.caBundle(t, apiService))
		})
	}
}

func TestSyncMissingAPIService(t *testing.T) {
	const other = "v1alpha1.identity.concierge.pinniped.dev"
	f := newFixture(t, func(c *Config) { c.APIServiceNames = []string{apiService, other} }, nil, newAPIService(other, nil))

	_, err := f.c.sync(f.ctx)
	require.EqualError(t, err, `APIService "`+apiService+`" not found`)
	secret := f.secret(t)
	assertServes(t, f, secret)
	assert.Equal(t, secret.Data[SecretKeyCACertificate], f.caBundle(t, other), "the existing APIService is updated anyway")

	_, err = f.agg.ApiregistrationV1().APIServices().Create(f.ctx, newAPIService(apiService, nil), metav1.CreateOptions{})
	require.NoError(t, err)
	// Wait for the informers to see both the new APIService and the Secret just created.
	require.Eventually(t, func() bool {
		_, errA := f.c.apiServices.Get(apiService)
		_, errS := f.c.secrets.Get(DefaultSecretName)
		return errA == nil && errS == nil
	}, 5*time.Second, 10*time.Millisecond)
	_, err = f.c.sync(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, secret.Data[SecretKeyCACertificate], f.caBundle(t, apiService))
}

func TestSyncCannotWrite(t *testing.T) {
	denied := errors.New("not the leader")
	deny := func(f *fixture) {
		f.kube.PrependReactor("*", "secrets", func(a kubetesting.Action) (bool, runtime.Object, error) {
			return a.GetVerb() == "create" || a.GetVerb() == "update", nil, denied
		})
	}

	t.Run("no Secret yet: nothing served", func(t *testing.T) {
		f := newFixture(t, nil, nil, newAPIService(apiService, nil))
		deny(f)
		_, err := f.c.sync(f.ctx)
		require.ErrorIs(t, err, denied)
		cert, key := f.c.Provider().CurrentCertKeyContent()
		assert.Nil(t, cert)
		assert.Nil(t, key)
		assert.Nil(t, f.caBundle(t, apiService))
	})

	t.Run("Secret due for renewal: still served", func(t *testing.T) {
		old := secretData(t, hostname, t0.Add(-(duration - renew)), nil)
		f := newFixture(t, nil, []runtime.Object{newSecret(old)}, newAPIService(apiService, nil))
		deny(f)
		_, err := f.c.sync(f.ctx)
		require.ErrorContains(t, err, "write Secret concierge/"+DefaultSecretName+": not the leader")
		assertServes(t, f, f.secret(t))
	})
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{name: "defaults", change: func(c *Config) { c.Duration, c.RenewBefore, c.ResyncPeriod, c.Clock = 0, 0, 0, nil }},
		{name: "no namespace", change: func(c *Config) { c.Namespace = "" }, wantErr: "Namespace and ServiceName are required"},
		{name: "no service", change: func(c *Config) { c.ServiceName = "" }, wantErr: "Namespace and ServiceName are required"},
		{name: "renew before longer than duration", change: func(c *Config) { c.RenewBefore = c.Duration }, wantErr: "need 0 <= RenewBefore"},
		{name: "negative duration", change: func(c *Config) { c.Duration = -time.Hour }, wantErr: "need 0 <= RenewBefore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(clocktesting.NewFakeClock(t0))
			tt.change(&cfg)
			c, err := New(cfg, kubefake.NewClientset(), aggregatorfake.NewSimpleClientset())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, DefaultSecretName, c.cfg.SecretName)
			assert.Equal(t, DefaultDuration, c.cfg.Duration)
			assert.Equal(t, 92*24*time.Hour, c.cfg.RenewBefore)
		})
	}

	_, err := New(Config{Namespace: "ns", ServiceName: "svc", APIServiceNames: []string{"x"}}, kubefake.NewClientset(), nil)
	require.ErrorContains(t, err, "an aggregator client is required")
}

// TestRunRotates runs the controller with the real clock and short lifetimes, and checks that a
// k8s.io/apiserver serving-certificate controller picks up each rotation.
func TestRunRotates(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	kube := kubefake.NewClientset()
	agg := aggregatorfake.NewSimpleClientset(newAPIService(apiService, nil))
	c, err := New(Config{
		Namespace: namespace, ServiceName: service, APIServiceNames: []string{apiService},
		Duration: 4 * time.Second, RenewBefore: 2 * time.Second,
	}, kube, agg)
	require.NoError(t, err)
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	select {
	case <-c.Provider().Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("no serving certificate after 10s")
	}
	listener := &countingListener{}
	c.Provider().AddListener(listener)
	servingController := dynamiccertificates.NewDynamicServingCertificateController(&tls.Config{}, nil, c.Provider(), nil, nil)
	require.NoError(t, servingController.RunOnce())
	first := servedCert(t, servingController)

	// Renewal is due one to two seconds after issuance (certificates record whole seconds).
	require.Eventually(t, func() bool { return listener.count.Load() > 0 }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, servingController.RunOnce())
	second := servedCert(t, servingController)
	assert.NotEqual(t, first.Raw, second.Raw)

	require.Eventually(t, func() bool {
		secret, err := kube.CoreV1().Secrets(namespace).Get(ctx, DefaultSecretName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		a, err := agg.ApiregistrationV1().APIServices().Get(ctx, apiService, metav1.GetOptions{})
		return err == nil && len(a.Spec.CABundle) > 0 && string(a.Spec.CABundle) == string(secret.Data[SecretKeyCACertificate])
	}, 10*time.Second, 20*time.Millisecond, "APIService caBundle follows the rotated CA")
}

type countingListener struct{ count atomic.Int32 }

func (l *countingListener) Enqueue() { l.count.Add(1) }

// servedCert returns the leaf certificate that c presents to a TLS client.
func servedCert(t *testing.T, c *dynamiccertificates.DynamicServingCertificateController) *x509.Certificate {
	t.Helper()
	config, err := c.GetConfigForClient(&tls.ClientHelloInfo{ServerName: hostname})
	require.NoError(t, err)
	require.Len(t, config.Certificates, 1)
	leaf, err := x509.ParseCertificate(config.Certificates[0].Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, []string{hostname}, leaf.DNSNames)
	return leaf
}
