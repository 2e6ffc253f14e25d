package audit

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestLoadTokenFingerprintKey(t *testing.T) {
	ctx := context.Background()
	labels := map[string]string{"app": "pinniped-concierge"}

	t.Run("created once, then read by every replica", func(t *testing.T) {
		client := fake.NewClientset()
		secrets := client.CoreV1().Secrets("ns")
		first, err := LoadTokenFingerprintKey(ctx, secrets, "audit-key", labels)
		if err != nil || len(first) != TokenFingerprintKeySize {
			t.Fatalf("got %d bytes, %v", len(first), err)
		}
		s, err := secrets.Get(ctx, "audit-key", metav1.GetOptions{})
		if err != nil || s.Type != TokenFingerprintKeySecretType || s.Labels["app"] != "pinniped-concierge" {
			t.Fatalf("the Secret: %+v, %v", s, err)
		}
		second, err := LoadTokenFingerprintKey(ctx, secrets, "audit-key", labels)
		if err != nil || !bytes.Equal(first, second) {
			t.Errorf("a second replica got another key (%v)", err)
		}
	})

	t.Run("an operator's key is used as it is", func(t *testing.T) {
		key := bytes.Repeat([]byte("k"), 48)
		client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "audit-key", Namespace: "ns"}, Data: map[string][]byte{"key": key}})
		got, err := LoadTokenFingerprintKey(ctx, client.CoreV1().Secrets("ns"), "audit-key", labels)
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("got %q, %v", got, err)
		}
	})

	t.Run("losing the race to create it reads the winner's", func(t *testing.T) {
		winner := bytes.Repeat([]byte("w"), 32)
		client := fake.NewClientset()
		client.PrependReactor("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
			_ = client.Tracker().Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "audit-key", Namespace: "ns"}, Data: map[string][]byte{"key": winner}})
			return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, "audit-key")
		})
		got, err := LoadTokenFingerprintKey(ctx, client.CoreV1().Secrets("ns"), "audit-key", labels)
		if err != nil || !bytes.Equal(got, winner) {
			t.Errorf("got %q, %v; want the winner's key", got, err)
		}
	})

	t.Run("a transient error is retried", func(t *testing.T) {
		client := fake.NewClientset()
		failures := 2
		client.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
			if failures > 0 {
				failures--
				return true, nil, apierrors.NewServiceUnavailable("etcd is busy")
			}
			return false, nil, nil
		})
		if _, err := LoadTokenFingerprintKey(ctx, client.CoreV1().Secrets("ns"), "audit-key", labels); err != nil {
			t.Errorf("after two transient errors: %v", err)
		}
	})

	t.Run("a key too short is an operator's error, said at once", func(t *testing.T) {
		client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "audit-key", Namespace: "ns"}, Data: map[string][]byte{"key": []byte("short")}})
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := LoadTokenFingerprintKey(ctx, client.CoreV1().Secrets("ns"), "audit-key", labels)
		if err == nil || !strings.Contains(err.Error(), `Secret audit-key: data["key"] holds 5 bytes; it needs at least 32`) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v", err)
		}
	})
}
