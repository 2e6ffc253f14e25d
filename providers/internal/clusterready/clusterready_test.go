package clusterready

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func node(name string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: ready, Reason: "KubeletNotReady", Message: "cni not initialized"},
		}},
	}
}

func coredns(ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status:     appsv1.DeploymentStatus{ReadyReplicas: ready, UpdatedReplicas: ready},
	}
}

var defaultSA = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}}

func TestWaitReportsEveryStepWhenUsable(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset(node("a", corev1.ConditionTrue), coredns(2), defaultSA)
	var steps []string
	err := Wait(context.Background(), client, 5*time.Second, func(step string, _ time.Duration, err error) {
		if err != nil {
			t.Errorf("%s: %v", step, err)
		}
		steps = append(steps, step)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 {
		t.Errorf("reported steps %v, want node, CoreDNS and ServiceAccount", steps)
	}
}

func TestWaitNamesTheStepAndReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		want    []string
	}{
		{"no node", nil, []string{"node Ready", "no node registered"}},
		{"node not ready", []runtime.Object{node("a", corev1.ConditionFalse)}, []string{"node Ready", "node a: KubeletNotReady: cni not initialized"}},
		{"coredns short", []runtime.Object{node("a", corev1.ConditionTrue), coredns(1)}, []string{"CoreDNS Ready", "1 of 2 replicas ready"}},
		{"no service account", []runtime.Object{node("a", corev1.ConditionTrue), coredns(2)}, []string{"default ServiceAccount", "not created yet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset(tc.objects...)
			var failed string
			err := Wait(context.Background(), client, time.Second, func(step string, _ time.Duration, err error) {
				if err != nil {
					failed = step
				}
			})
			if err == nil {
				t.Fatal("Wait succeeded on an unusable cluster")
			}
			if !strings.Contains(failed, tc.want[0]) {
				t.Errorf("failed step %q, want %q", failed, tc.want[0])
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
