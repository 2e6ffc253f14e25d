package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ory/fosite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
)

// A record of a version this build does not know, as a newer build writes during an upgrade that
// is rolled back, is not read (the login is not found here, and the user logs in again) but is
// never deleted before its time: the newer build, back again, reads it as it was. A record of
// another layout version is treated the same.
func TestNewerRecordsKept(t *testing.T) {
	ctx := context.Background()
	clientset := fake.NewClientset()
	store, req := storeWithTokens(clientset, sessionstest.Keys())
	if err := store.CreateRefreshTokenSession(ctx, "refresh-sig", "", req); err != nil {
		t.Fatal(err)
	}
	secrets := clientset.CoreV1().Secrets(namespace)
	name := SecretName(typeRefreshToken, "refresh-sig")
	written, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for what, newer := range map[string]func(data map[string][]byte){
		"record version": func(data map[string][]byte) {
			data[DataKey] = []byte(strings.Replace(string(data[DataKey]), `"version":"`+recordVersion+`"`, `"version":"9"`, 1))
		},
		"layout version": func(data map[string][]byte) { data[VersionKey] = []byte("2") },
	} {
		secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secret.Data = map[string][]byte{DataKey: written.Data[DataKey], VersionKey: written.Data[VersionKey]}
		newer(secret.Data)
		if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.GetRefreshTokenSession(ctx, "refresh-sig", NewSession()); !errors.Is(err, fosite.ErrNotFound) {
			t.Errorf("%s newer than this build's: %v, want not found", what, err)
		}
		if n, err := store.GarbageCollect(ctx); err != nil || n != 0 {
			t.Errorf("%s newer than this build's: the collector deleted %d (%v) before their time", what, n, err)
		}
		kept, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s newer than this build's: the record is gone: %v", what, err)
		}
		if string(kept.Data[DataKey]) != string(secret.Data[DataKey]) || string(kept.Data[VersionKey]) != string(secret.Data[VersionKey]) {
			t.Errorf("%s newer than this build's: the record was rewritten", what)
		}
	}
}
