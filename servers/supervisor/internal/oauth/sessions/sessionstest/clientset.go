// Package sessionstest helps tests of what the Supervisor keeps in Secrets (the session storage,
// its keys): client-go's fake clientset ignores resourceVersions, so on it their optimistic
// concurrency could never be seen to work.
package sessionstest

import (
	"errors"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// OptimisticClientset is a fake clientset whose Secrets have resourceVersions that an update must
// match, as the kube-apiserver's do.
func OptimisticClientset() *fake.Clientset {
	clientset := fake.NewClientset()
	var (
		mu      sync.Mutex
		version int
	)
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	bump := func(s *corev1.Secret) { version++; s.ResourceVersion = strconv.Itoa(version) }
	clientset.PrependReactor("create", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		bump(action.(k8stesting.CreateAction).GetObject().(*corev1.Secret))
		return false, nil, nil
	})
	clientset.PrependReactor("update", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		s := action.(k8stesting.UpdateAction).GetObject().(*corev1.Secret)
		current, err := clientset.Tracker().Get(gvr, s.Namespace, s.Name)
		if err != nil {
			return true, nil, err
		}
		if current.(*corev1.Secret).ResourceVersion != s.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), s.Name, errors.New("the object has been modified"))
		}
		bump(s)
		// Stored by the tracker while the lock is held, so that no other update passes the check
		// against the version this one replaces.
		return true, s, clientset.Tracker().Update(gvr, s, s.Namespace)
	})
	return clientset
}
