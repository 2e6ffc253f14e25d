package clientsecrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const ns = "pinniped-supervisor"

var owner = Owner{APIVersion: "config.supervisor.pinniped.dev/v1alpha1", Name: "client.oauth.pinniped.dev-app", UID: "7c1f-uid"}

func TestSecretName(t *testing.T) {
	// base32("abc") = MFRGG; the name must be a valid, lowercase Secret name.
	if got := SecretName("abc"); got != "pinniped-storage-oidc-client-secret-mfrgg" {
		t.Errorf("SecretName = %q", got)
	}
	long := SecretName("0b6d4a51-6fd6-4b5b-9e0f-3a9d1c2e7f80")
	if len(long) > 253 || strings.ToLower(long) != long {
		t.Errorf("SecretName of a UID = %q", long)
	}
}

func TestGenerate(t *testing.T) {
	secret, err := Generate(bytes.NewReader(bytes.Repeat([]byte{0xab}, 40)))
	if err != nil || secret != strings.Repeat("ab", 32) {
		t.Errorf("Generate = %q, %v", secret, err)
	}
	if _, err := Generate(bytes.NewReader(make([]byte, 31))); err == nil {
		t.Error("Generate accepted a short random source")
	}
}

func TestSaveAndLoad(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := &Store{Secrets: client.CoreV1().Secrets(ns), Labels: map[string]string{"app": "pinniped-supervisor"}}

	rec, err := store.Load(ctx, owner.UID)
	if err != nil || len(rec.Hashes) != 0 {
		t.Fatalf("Load without a Secret = %+v, %v", rec, err)
	}
	if err := store.Save(ctx, owner, rec, []string{"h1"}); err != nil {
		t.Fatal(err)
	}
	secret, err := client.CoreV1().Secrets(ns).Get(ctx, SecretName(owner.UID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != "storage.pinniped.dev/oidc-client-secret" ||
		!cmp.Equal(secret.Labels, map[string]string{"app": "pinniped-supervisor", "storage.pinniped.dev/type": "oidc-client-secret"}) ||
		string(secret.Data["pinniped-storage-version"]) != "1" {
		t.Errorf("stored Secret: %+v", secret)
	}
	var doc map[string]any
	if err := json.Unmarshal(secret.Data["pinniped-storage-data"], &doc); err != nil ||
		!cmp.Equal(doc, map[string]any{"hashes": []any{"h1"}, "version": "1"}) {
		t.Errorf("stored data %s: %v", secret.Data["pinniped-storage-data"], err)
	}
	wantOwner := []metav1.OwnerReference{{APIVersion: owner.APIVersion, Kind: "OIDCClient", Name: owner.Name, UID: owner.UID}}
	if diff := cmp.Diff(wantOwner, secret.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}

	rec, err = store.Load(ctx, owner.UID)
	if err != nil || !cmp.Equal(rec.Hashes, []string{"h1"}) {
		t.Fatalf("Load = %+v, %v", rec, err)
	}
	if err := store.Save(ctx, owner, rec, []string{"h2", "h1"}); err != nil {
		t.Fatal(err)
	}
	rec, err = store.Load(ctx, owner.UID)
	if err != nil || !cmp.Equal(rec.Hashes, []string{"h2", "h1"}) {
		t.Fatalf("Load after update = %+v, %v", rec, err)
	}
	updated, _ := client.CoreV1().Secrets(ns).Get(ctx, SecretName(owner.UID), metav1.GetOptions{})
	if !cmp.Equal(updated.Labels, secret.Labels) || !cmp.Equal(updated.OwnerReferences, secret.OwnerReferences) {
		t.Errorf("the update lost labels or owners: %+v", updated.ObjectMeta)
	}
}

func TestConcurrentFirstSaves(t *testing.T) {
	ctx := context.Background()
	store := &Store{Secrets: fake.NewClientset().CoreV1().Secrets(ns)}
	first, _ := store.Load(ctx, owner.UID)
	second, _ := store.Load(ctx, owner.UID)
	if err := store.Save(ctx, owner, first, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, owner, second, []string{"b"}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second creation: %v, want AlreadyExists", err)
	}
}

func TestHashesRejectsOtherFormats(t *testing.T) {
	valid := func() *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{TypeLabelKey: TypeLabelValue}},
			Type:       SecretType,
			Data: map[string][]byte{
				"pinniped-storage-version": []byte("1"),
				"pinniped-storage-data":    []byte(`{"hashes":["x"],"version":"1"}`),
			},
		}
	}
	if got, err := Hashes(valid()); err != nil || !cmp.Equal(got, []string{"x"}) {
		t.Fatalf("Hashes(valid) = %v, %v", got, err)
	}
	tests := map[string]func(*corev1.Secret){
		"wrong type":          func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque },
		"wrong label":         func(s *corev1.Secret) { s.Labels[TypeLabelKey] = "authcode" },
		"wrong storage":       func(s *corev1.Secret) { s.Data["pinniped-storage-version"] = []byte("2") },
		"not JSON":            func(s *corev1.Secret) { s.Data["pinniped-storage-data"] = []byte("{") },
		"wrong data version":  func(s *corev1.Secret) { s.Data["pinniped-storage-data"] = []byte(`{"hashes":["x"],"version":"2"}`) },
		"missing the version": func(s *corev1.Secret) { s.Data["pinniped-storage-data"] = []byte(`{"hashes":["x"]}`) },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			s := valid()
			mutate(s)
			if _, err := Hashes(s); !errors.Is(err, ErrInvalidStorage) {
				t.Errorf("Hashes = %v, want ErrInvalidStorage", err)
			}
		})
	}
}
