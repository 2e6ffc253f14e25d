package sessionkeys

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

const (
	namespace = "supervisor"
	retire    = 10 * time.Hour
)

type harness struct {
	kube  *kubefake.Clientset
	clock *clocktesting.FakeClock
	ring  *tokenseal.Ring
	c     *Controller
}

// start runs the controller on a fake clientset holding objects.
func start(t *testing.T, objects ...*corev1.Secret) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{kube: sessionstest.OptimisticClientset(), clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), ring: tokenseal.NewRing()}
	for _, o := range objects {
		if _, err := h.kube.CoreV1().Secrets(namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := kubeinformers.NewSharedInformerFactoryWithOptions(h.kube, 0, kubeinformers.WithNamespace(namespace))
	h.c = New(Config{Namespace: namespace, Labels: map[string]string{"app": "supervisor"}, RetireAfter: retire, Clock: h.clock},
		h.kube, factory.Core().V1().Secrets(), h.ring)
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	go h.c.Run(ctx)
	return h
}

// stored waits until the key Secret has n keys, and the ring has loaded them, and returns it.
func (h *harness) stored(t *testing.T, n int) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := h.kube.CoreV1().Secrets(namespace).Get(ctx, SecretName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = s
		keys, _ := tokenseal.ParseKeys(s.Data)
		return len(keys) == n, nil
	})
	if err != nil {
		t.Fatalf("the key Secret %v does not have %d keys", got, n)
	}
	return got
}

// resync syncs as the resync after the clock moved would, once the informer has what is stored.
// The controller's own loop runs too, and the clock step may have woken it: it may have written
// after stored was read, so the wait is for the informer to have the Secret as stored now, and a
// conflict means the loop wrote first, which the caller's next look at the stored Secret sees.
func (h *harness) resync(t *testing.T) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		now, err := h.kube.CoreV1().Secrets(namespace).Get(ctx, SecretName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		s, err := h.c.secrets.Get(SecretName)
		return err == nil && s.ResourceVersion == now.ResourceVersion, nil
	})
	if err != nil {
		t.Fatal("the informer does not have the stored key Secret")
	}
	if err := h.c.sync(context.Background(), ""); err != nil && !apierrors.IsConflict(err) {
		t.Fatal(err)
	}
}

// opens reports whether the ring opens sealed, a seal of "token" for the login "login".
func opens(r *tokenseal.Ring, sealed string) bool {
	got, err := r.Open(sealed, "login")
	return err == nil && got == "token"
}

func TestKeyLifecycle(t *testing.T) {
	h := start(t)
	first := h.stored(t, 1)
	if first.Type != SecretType || first.Labels["app"] != "supervisor" {
		t.Errorf("created %s with labels %v", first.Type, first.Labels)
	}
	<-h.ring.Ready()
	sealedFirst, err := h.ring.Seal("token", "login")
	if err != nil || !opens(h.ring, sealedFirst) {
		t.Fatalf("sealing with the first key: %v", err)
	}

	// Before RotateAfter nothing changes; at it, a second key is added and the first still opens.
	h.clock.Step(DefaultRotateAfter - time.Second)
	h.resync(t)
	if s := h.stored(t, 1); s.ResourceVersion != first.ResourceVersion {
		t.Error("the key Secret changed before its key was due for rotation")
	}
	h.clock.Step(time.Second)
	h.resync(t)
	rotated := h.stored(t, 2)
	if !opens(h.ring, sealedFirst) {
		t.Fatal("after a rotation, what the first key sealed does not open")
	}

	// The replaced key stays until its successor has sealed for RetireAfter.
	h.clock.Step(tokenseal.KeyActivation + retire - time.Second)
	h.resync(t)
	if s := h.stored(t, 2); s.ResourceVersion != rotated.ResourceVersion {
		t.Error("the replaced key was retired early")
	}
	h.clock.Step(time.Second)
	h.resync(t)
	retired := h.stored(t, 1)
	h.resync(t)
	if opens(h.ring, sealedFirst) {
		t.Error("a retired key still opens")
	}
	if _, ok := retired.Data[tokenseal.KeyName(h.clock.Now().Add(-tokenseal.KeyActivation-retire))]; !ok {
		t.Errorf("the key kept is not the newer one: %v", retired.Data)
	}
}

// Entries that are not keys are the operator's: reported, never deleted; the valid keys work.
func TestLeavesOtherEntries(t *testing.T) {
	key := tokenseal.KeyName(time.Now().Add(-time.Hour))
	h := start(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: namespace},
		Data:       map[string][]byte{key: tokenseal.NewKeyMaterial(), "note": []byte("rotated by hand")},
	})
	<-h.ring.Ready()
	s := h.stored(t, 1)
	h.resync(t)
	s, _ = h.kube.CoreV1().Secrets(namespace).Get(context.Background(), SecretName, metav1.GetOptions{})
	if string(s.Data["note"]) != "rotated by hand" || s.Data[key] == nil {
		t.Errorf("data %v", s.Data)
	}
	if _, err := h.ring.Seal("token", "login"); err != nil {
		t.Error(err)
	}
}

// A Secret whose keys were all removed by hand gets a new key: the ring seals with it, and what
// the removed key sealed no longer opens (as the package comment says of a deleted Secret).
func TestEmptiedSecret(t *testing.T) {
	h := start(t)
	first := h.stored(t, 1)
	<-h.ring.Ready()
	sealed, _ := h.ring.Seal("token", "login")
	emptied := first.DeepCopy()
	emptied.Data = nil
	if _, err := h.kube.CoreV1().Secrets(namespace).Update(context.Background(), emptied, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := h.ring.Open(sealed, "login")
		return errors.Is(err, tokenseal.ErrCannotOpen), nil
	})
	if err != nil {
		t.Fatal("what the removed key sealed still opens")
	}
	h.stored(t, 1)
	if again, err := h.ring.Seal("token", "login"); err != nil || !opens(h.ring, again) {
		t.Errorf("sealing with the new key: %v", err)
	}
}
