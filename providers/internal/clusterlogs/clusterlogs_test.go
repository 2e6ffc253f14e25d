package clusterlogs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestDump(t *testing.T) {
	t.Parallel()
	client := fake.NewSimpleClientset(
		&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "c1-control-plane"},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.2"}},
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.33.13"},
			},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-c1"},
			Spec:       corev1.PodSpec{NodeName: "c1-control-plane", Containers: []corev1.Container{{Name: "etcd"}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
				{RestartCount: 3, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
			}},
		},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}},
	)
	dir := t.TempDir()
	if err := Dump(context.Background(), client, dir); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if nodes := read("nodes.txt"); !strings.Contains(nodes, "c1-control-plane") || !strings.Contains(nodes, "True") || !strings.Contains(nodes, "192.0.2.2") {
		t.Errorf("nodes.txt:\n%s", nodes)
	}
	if pods := read("pods.txt"); !strings.Contains(pods, "CrashLoopBackOff") || !strings.Contains(pods, "default") {
		t.Errorf("pods.txt:\n%s", pods)
	}
	// The fake client serves "fake logs" for any container.
	if logs := read("kube-system/etcd-c1_etcd.log"); logs == "" {
		t.Error("no kube-system container log written")
	}
	if logs := read("default/app_app.log"); logs == "" {
		t.Error("no log written for a pod outside kube-system")
	}
}
