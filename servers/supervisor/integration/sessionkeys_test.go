package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"sealion.dev/servers/supervisor/internal/controllers/sessionkeys"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

// The Supervisor, acting as its ServiceAccount, keeps the Secret of the keys that seal the
// sessions' upstream tokens: it makes it with one key, labelled as its other objects, and makes
// a new one when it is deleted.
func TestSessionKeySecret(t *testing.T) {
	secrets := env.kube.CoreV1().Secrets(supervisorNamespace)
	waitForKeys := func(notUID string) *corev1.Secret {
		t.Helper()
		var got *corev1.Secret
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			s, err := secrets.Get(ctx, sessionkeys.SecretName, metav1.GetOptions{})
			if err != nil || string(s.UID) == notUID {
				return false, nil
			}
			got = s
			return true, nil
		})
		if err != nil {
			t.Fatalf("no key Secret %s: %v\n%s", sessionkeys.SecretName, err, env.serverLog())
		}
		keys, err := tokenseal.ParseKeys(got.Data)
		if err != nil || len(keys) != 1 || got.Type != sessionkeys.SecretType || got.Labels["app"] != "pinniped-supervisor" {
			t.Fatalf("key Secret of type %s, labels %v: %d keys, %v", got.Type, got.Labels, len(keys), err)
		}
		return got
	}
	first := waitForKeys("")
	if err := secrets.Delete(context.Background(), sessionkeys.SecretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForKeys(string(first.UID))
}
