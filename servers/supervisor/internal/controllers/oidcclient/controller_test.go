package oidcclient

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	supervisorfake "sealion.dev/core/generated/supervisor/clientset/versioned/fake"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	"sealion.dev/core/testing/fakewatch"
	"sealion.dev/servers/supervisor/internal/clientcheck"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
)

const (
	namespace = "supervisor"
	name      = configv1alpha1.OIDCClientNamePrefix + "webapp"
)

func TestStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := &configv1alpha1.OIDCClient{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: "client-uid", Generation: 3},
		Spec: configv1alpha1.OIDCClientSpec{
			AllowedRedirectURIs: []configv1alpha1.RedirectURI{"https://webapp.example.com/callback"},
			AllowedGrantTypes:   []configv1alpha1.GrantType{configv1alpha1.GrantTypeAuthorizationCode},
			AllowedScopes:       []configv1alpha1.Scope{configv1alpha1.ScopeOpenID, configv1alpha1.ScopeOfflineAccess},
		},
		Status: configv1alpha1.OIDCClientStatus{Conditions: []metav1.Condition{
			{Type: "ZOld", Status: metav1.ConditionTrue, Reason: "Success", Message: "of an older version", ObservedGeneration: 1, LastTransitionTime: metav1.Now()},
			{Type: clientcheck.ConditionAllowedRedirectURIsValid, Status: metav1.ConditionTrue, Reason: "Success", Message: "allowedRedirectURIs is valid", ObservedGeneration: 1, LastTransitionTime: metav1.Now()},
		}},
	}
	kube := kubefake.NewClientset()
	supervisor := supervisorfake.NewSimpleClientset(client)
	watches := fakewatch.Record(kube, supervisor)
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(namespace))
	crFactory := supervisorinformers.NewSharedInformerFactoryWithOptions(supervisor, 0, supervisorinformers.WithNamespace(namespace))
	c := New(namespace, supervisor, Informers{
		OIDCClients: crFactory.Config().V1alpha1().OIDCClients(),
		Secrets:     kubeFactory.Core().V1().Secrets(),
	}, bcrypt.MinCost)
	kubeFactory.Start(ctx.Done())
	crFactory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		kubeFactory.Shutdown()
		crFactory.Shutdown()
	})
	watches.Wait(t, 10*time.Second, "oidcclients", "secrets")
	go c.Run(ctx)

	// waitFor waits until the stored status has phase, total secrets and the conditions want
	// (type: status).
	waitFor := func(phase configv1alpha1.Phase, total int32, want map[string]metav1.ConditionStatus) *configv1alpha1.OIDCClient {
		t.Helper()
		var got *configv1alpha1.OIDCClient
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			if got, err = supervisor.ConfigV1alpha1().OIDCClients(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return false, err
			}
			if got.Status.Phase != phase || got.Status.TotalClientSecrets != total {
				return false, nil
			}
			for typ, status := range want {
				if !meta.IsStatusConditionPresentAndEqual(got.Status.Conditions, typ, status) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("status %+v; want phase %s, %d secrets, conditions %v", got.Status, phase, total, want)
		}
		return got
	}

	got := waitFor(configv1alpha1.PhaseError, 0, map[string]metav1.ConditionStatus{
		configv1alpha1.ConditionClientSecretExists:     metav1.ConditionFalse,
		configv1alpha1.ConditionAllowedGrantTypesValid: metav1.ConditionFalse,
		configv1alpha1.ConditionAllowedScopesValid:     metav1.ConditionTrue,
	})
	// Sorted by type, our own AllowedRedirectURIsValid gone while true, a type of an older
	// version kept.
	var types []string
	for _, cond := range got.Status.Conditions {
		types = append(types, cond.Type)
		if cond.Type != "ZOld" && (cond.ObservedGeneration != 3 || cond.LastTransitionTime.IsZero()) {
			t.Errorf("condition %+v: want observedGeneration 3 and a transition time", cond)
		}
	}
	if diff := cmp.Diff([]string{"AllowedGrantTypesValid", "AllowedScopesValid", "ClientSecretExists", "ZOld"}, types); diff != "" {
		t.Errorf("condition types (-want +got):\n%s", diff)
	}

	// A secret and a fixed spec make the client Ready.
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	store := &clientsecrets.Store{Secrets: kube.CoreV1().Secrets(namespace)}
	rec, err := store.Load(ctx, client.UID)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, clientsecrets.Owner{APIVersion: "config.supervisor.pinniped.dev/v1alpha1", Name: name, UID: client.UID}, rec, []string{string(hash)}); err != nil {
		t.Fatal(err)
	}
	waitFor(configv1alpha1.PhaseError, 1, map[string]metav1.ConditionStatus{configv1alpha1.ConditionClientSecretExists: metav1.ConditionTrue})
	got.Spec.AllowedGrantTypes = append(got.Spec.AllowedGrantTypes, configv1alpha1.GrantTypeRefreshToken)
	got.Generation = 4
	if _, err := supervisor.ConfigV1alpha1().OIDCClients(namespace).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(configv1alpha1.PhaseReady, 1, map[string]metav1.ConditionStatus{configv1alpha1.ConditionAllowedGrantTypesValid: metav1.ConditionTrue})
	updates := countStatusUpdates(supervisor)

	// Syncing again without a change writes nothing.
	c.Enqueue(name)
	time.Sleep(200 * time.Millisecond)
	if n := countStatusUpdates(supervisor); n != updates {
		t.Errorf("%d status updates without a change", n-updates)
	}
}

func countStatusUpdates(c *supervisorfake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}
